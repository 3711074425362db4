import EvcaptureTesting
import Capture
@testable import Camera
import Testing

/// The per-detent arithmetic of each control kind (docs/behaviour.md#slider-arithmetic).
@Suite struct ControlsScaleTests {
    let continuous = ControlScale.continuous(range: 0...10, prominentValues: [5])

    @Test func continuousMovesByRangeOverStepsAndSettlesOnProminentValues() {
        #expect(continuous.value(from: 0, movedBy: 1, stepsPerRange: 50) == 0.2)
        #expect(continuous.value(from: 0, movedBy: 5, stepsPerRange: 50) == 1)
        #expect(continuous.value(from: 0, movedBy: 1, stepsPerRange: 4) == 2.5)
        // Crossing 5 going up or down stops on it; the next detent leaves it.
        #expect(continuous.value(from: 4.9, movedBy: 1, stepsPerRange: 50) == 5)
        #expect(continuous.value(from: 5, movedBy: 1, stepsPerRange: 50) == 5.2)
        #expect(continuous.value(from: 5.1, movedBy: -1, stepsPerRange: 50) == 5)
        #expect(continuous.value(from: 4.5, movedBy: 2, stepsPerRange: 10) == 6)  // 4.5 → 5 (settled) → 6
        // Clamped at both ends.
        #expect(continuous.value(from: 9.9, movedBy: 3, stepsPerRange: 50) == 10)
        #expect(continuous.value(from: 0.1, movedBy: -3, stepsPerRange: 50) == 0)
    }

    @Test func discreteMovesOneListedValuePerDetent() {
        let iso = ControlScale.discrete(values: [100, 200, 400, 800])
        #expect(iso.value(from: 100, movedBy: 1, stepsPerRange: 50) == 200)
        #expect(iso.value(from: 200, movedBy: 2, stepsPerRange: 50) == 800)
        #expect(iso.value(from: 800, movedBy: 1, stepsPerRange: 50) == 800)
        #expect(iso.value(from: 100, movedBy: -1, stepsPerRange: 50) == 100)
        // An off-list value (set elsewhere): the neighbouring listed value is one detent away.
        #expect(iso.value(from: 300, movedBy: 1, stepsPerRange: 50) == 400)
        #expect(iso.value(from: 300, movedBy: -1, stepsPerRange: 50) == 200)
        #expect(iso.value(from: 300, movedBy: -2, stepsPerRange: 50) == 100)
    }

    @Test func rangeWithStepAndExposureBiasValues() {
        #expect(ControlScale.values(in: 0...1, step: 0.25) == [0, 0.25, 0.5, 0.75, 1])
        #expect(exposureBiasValues.count == 13)
        #expect(exposureBiasValues.first == -2 && exposureBiasValues.last == 2)
        #expect(exposureBiasValues[6] == 0)
        let ev = ControlScale.discrete(values: exposureBiasValues)
        #expect(ev.value(from: 0, movedBy: 1, stepsPerRange: 50) == 0.333333333)
        #expect(ev.value(from: 0, movedBy: 3, stepsPerRange: 50) == 1)
        #expect(ev.value(from: 0, movedBy: -7, stepsPerRange: 50) == -2)
    }

    @Test func pickerMovesOneIndexAndWrapsOnlyWhenConfigured() {
        let picker = ControlScale.index(count: 4, wraps: false)
        #expect(picker.value(from: 0, movedBy: 1, stepsPerRange: 50) == 1)
        #expect(picker.value(from: 3, movedBy: 1, stepsPerRange: 50) == 3)
        #expect(picker.value(from: 0, movedBy: -1, stepsPerRange: 50) == 0)
        let wrapping = ControlScale.index(count: 4, wraps: true)
        #expect(wrapping.value(from: 3, movedBy: 1, stepsPerRange: 50) == 0)
        #expect(wrapping.value(from: 0, movedBy: -1, stepsPerRange: 50) == 3)
        #expect(wrapping.value(from: 1, movedBy: -6, stepsPerRange: 50) == 3)
        let control = Control.indexPicker(name: "wb", title: "WB", symbolName: "s", titles: ["Auto", "Daylight"], index: 1)
        #expect(control.displayValue == "Daylight")
    }

    @Test func zoomMappingIsFactorOfTheMinimum() {
        let map = ZoomMapping(
            CameraControlInfo(id: .zoomAbsolute, name: "zoom_absolute", minimum: 100, maximum: 500, defaultValue: 100, value: 100))
        #expect(map.scale == .continuous(range: 1...5, prominentValues: [2, 3, 4]))
        #expect(map.factor(raw: 108) == 1.08)
        #expect(map.raw(factor: 1.08) == 108)
        #expect(map.raw(factor: 9) == 500)
        let stepped = ZoomMapping(
            CameraControlInfo(id: .zoomAbsolute, name: "z", minimum: 10, maximum: 40, step: 5, defaultValue: 10, value: 10))
        #expect(stepped.raw(factor: 1.3) == 15)  // 13 rounds to the step of 5
        let zeroMin = ZoomMapping(CameraControlInfo(id: .zoomAbsolute, name: "z", minimum: 0, maximum: 300, defaultValue: 0, value: 0))
        #expect(zeroMin.factor(raw: 0) == 1)
        #expect(zeroMin.factor(raw: 300) == 4)
        let zoom = Control(name: "zoom", title: "Zoom", symbolName: "z", scale: map.scale, value: 1.08, valueFormat: "%.1f×")
        #expect(zoom.displayValue == "1.1×")
    }

    /// Property: whatever the moves, a value stays in range and on a step or a listed value.
    @Test func valuesStayInRangeAndOnTheGrid() {
        var rng = SeededRandom(seed: 0xC0FFEE)
        for _ in 0..<2000 {
            let lo = Double(Int.random(in: -50...50, using: &rng))
            let hi = lo + Double(Int.random(in: 1...200, using: &rng))
            let steps = Int.random(in: 1...120, using: &rng)
            let prominent = (0..<Int.random(in: 0...3, using: &rng)).map { _ in Double.random(in: lo...hi, using: &rng) }
            let listed = ControlScale.values(in: lo...hi, step: Double(Int.random(in: 1...10, using: &rng)) / 4)
            let scales: [ControlScale] = [
                .continuous(range: lo...hi, prominentValues: prominent),
                .discrete(values: listed),
                .index(count: Int.random(in: 1...8, using: &rng), wraps: Bool.random(using: &rng)),
            ]
            for scale in scales {
                var v = scale.clamped(Double.random(in: (lo - 10)...(hi + 10), using: &rng))
                let start = v
                for _ in 0..<20 {
                    v = scale.value(from: v, movedBy: Int.random(in: -7...7, using: &rng), stepsPerRange: steps)
                    #expect(scale.allows(v), "\(v) escaped \(scale)")
                    if case .continuous = scale {
                        // On the step grid from where it started, from a prominent value it
                        // settled on, or from an end it was clamped to.
                        let size = (hi - lo) / Double(steps)
                        let anchors = [start, lo, hi] + prominent
                        let onGrid = anchors.contains { a in
                            let k = (v - a) / size
                            return abs(k - k.rounded()) < 1e-4  // tidy() rounding drifts far below a step
                        }
                        #expect(onGrid || v == hi, "\(v) is off every step grid of \(scale) start \(start) steps \(steps)")
                    }
                }
            }
        }
    }
}
