import EvcaptureTesting
@testable import Capture
import Vocabulary
import Testing

/// Each source of slider deltas (docs/behaviour.md#slider-inputs).
@Suite struct ControlsDecoderTests {
    @Test func relativeAxesGiveOneDetentPerUnit() {
        var encoder = SliderDecoder(profile: profile("rotary", codes: [.relX], roles: [.relX: slider]))
        #expect(encoder.isSliderCapable && !encoder.hasLightPress)
        #expect(encoder.decode(frame(0, (.relX, 1))) == [.slide(1)])
        #expect(encoder.decode(frame(0, (.relX, -1))) == [.slide(-1)])
        var y = SliderDecoder(profile: profile("rotary-y", codes: [.relY], roles: [.relY: slider]))
        #expect(y.decode(frame(0, (.relY, 3))) == [.slide(3)])
        var dial = SliderDecoder(profile: profile("powermate", codes: [.relDial, .btn0], roles: [.relDial: slider, .btn0: lightPress]))
        #expect(dial.hasLightPress)
        #expect(dial.decode(frame(0, (.relDial, -2))) == [.slide(-2)])
        #expect(dial.decode(frame(0, (.btn0, 1))) == [.lightPress])
        #expect(dial.decode(frame(0, (.btn0, 0))).isEmpty)
        // Codes without a slider role count for nothing.
        #expect(dial.decode(frame(0, (.relX, 5))).isEmpty)
    }

    @Test func hiResWheelAccumulates120PerDetentAndLowResIsIgnored() {
        var wheel = SliderDecoder(
            profile: profile("huion", codes: [.relWheel, .relWheelHiRes, .btn0], roles: [.relWheel: slider, .relWheelHiRes: slider]))
        #expect(wheel.relativeUnits == [EventCode.relWheelHiRes.code: 120])
        // The kernel's order: REL_WHEEL then REL_WHEEL_HI_RES in one frame — one detent.
        #expect(wheel.decode(frame(0, (.relWheel, 1), (.relWheelHiRes, 120))) == [.slide(1)])
        // A hi-res mouse: 30 units at a time, the remainder carries over.
        #expect(wheel.decode(frame(0, (.relWheelHiRes, 30))).isEmpty)
        #expect(wheel.decode(frame(0, (.relWheelHiRes, 30))).isEmpty)
        #expect(wheel.decode(frame(0, (.relWheelHiRes, 30))).isEmpty)
        #expect(wheel.decode(frame(0, (.relWheel, 1), (.relWheelHiRes, 30))) == [.slide(1)])
        #expect(wheel.decode(frame(0, (.relWheelHiRes, 200))) == [.slide(1)])  // 80 left over
        #expect(wheel.decode(frame(0, (.relWheelHiRes, 40))) == [.slide(1)])
        // Turning back drops the partial detent of the other direction, as the kernel does.
        #expect(wheel.decode(frame(0, (.relWheelHiRes, 100))).isEmpty)
        #expect(wheel.decode(frame(0, (.relWheelHiRes, -100))).isEmpty)
        #expect(wheel.decode(frame(0, (.relWheelHiRes, -20))) == [.slide(-1)])
    }

    @Test func lowResWheelCountsWhenThereIsNoHiResCode() {
        var wheel = SliderDecoder(profile: profile("old-mouse", codes: [.relWheel], roles: [.relWheel: slider]))
        #expect(wheel.decode(frame(0, (.relWheel, -1))) == [.slide(-1)])
        // Only one of the pair needs the slider role; the device's capabilities pick the code.
        let onlyLow = SliderDecoder(profile: profile("m", codes: [.relWheel, .relWheelHiRes], roles: [.relWheel: slider]))
        #expect(onlyLow.relativeUnits == [EventCode.relWheelHiRes.code: 120])
    }

    @Test func knobKeysStepOnPressOnly() {
        let up = RoleAssignment(role: .slider, source: .udev, reason: "EVCAPTURE_ROLE=knob", step: 1)
        let down = RoleAssignment(role: .slider, source: .udev, reason: "EVCAPTURE_ROLE=knob", step: -1)
        var knob = SliderDecoder(
            profile: profile("knob", codes: [.volumeUp, .volumeDown, .mute], roles: [.volumeUp: up, .volumeDown: down, .mute: lightPress]))
        #expect(knob.decode(frame(0, (.volumeUp, 1))) == [.slide(1)])
        #expect(knob.decode(frame(0, (.volumeUp, 2))).isEmpty)  // autorepeat
        #expect(knob.decode(frame(0, (.volumeUp, 0))).isEmpty)  // release
        #expect(knob.decode(frame(0, (.volumeDown, 1))) == [.slide(-1)])
        #expect(knob.decode(frame(0, (.mute, 1))) == [.lightPress])
    }

    @Test func absoluteRotaryAxisWrapsTheShortWay() {
        let axis = EventCode.abs(0)
        var rotary = SliderDecoder(
            profile: profile("rotary-abs", codes: [axis], roles: [axis: slider], absInfo: [0: AbsInfo(value: 22, minimum: 0, maximum: 23)]))
        #expect(rotary.decode(frame(0, (axis, 23))) == [.slide(1)])
        #expect(rotary.decode(frame(0, (axis, 0))) == [.slide(1)])  // rollover 23 → 0
        #expect(rotary.decode(frame(0, (axis, 1))) == [.slide(1)])
        #expect(rotary.decode(frame(0, (axis, 0))) == [.slide(-1)])
        #expect(rotary.decode(frame(0, (axis, 23))) == [.slide(-1)])  // rollover 0 → 23
        #expect(rotary.decode(frame(0, (axis, 20))) == [.slide(-3)])
    }

    @Test func slidesInOneFrameAreSummedAndOrderIsKept() {
        var dial = SliderDecoder(
            profile: profile("d", codes: [.relDial, .relX, .btn0], roles: [.relDial: slider, .relX: slider, .btn0: lightPress]))
        #expect(dial.decode(frame(0, (.relDial, 1), (.relX, 2), (.btn0, 1), (.relDial, -1))) == [.slide(3), .lightPress, .slide(-1)])
    }

    /// Property: hi-res and low-res wheel codes never double count. A kernel-like stream
    /// (hi-res units in random chunks, a REL_WHEEL ±1 in the frame where a detent completes)
    /// gives exactly the low-res count, however the chunks fall.
    @Test func hiResAndLowResWheelNeverDoubleCount() {
        var rng = SeededRandom(seed: 42)
        for _ in 0..<500 {
            var decoder = SliderDecoder(
                profile: profile("wheel", codes: [.relWheel, .relWheelHiRes], roles: [.relWheel: slider, .relWheelHiRes: slider]))
            var kernelAcc = 0
            var lowResTotal = 0
            var decoded = 0
            var direction = Bool.random(using: &rng) ? 1 : -1
            for _ in 0..<200 {
                if Int.random(in: 0..<20, using: &rng) == 0 { direction = -direction }
                let chunk = direction * [120, 60, 40, 30, 24, 15, 8][Int.random(in: 0..<7, using: &rng)]
                // What hid-input does: reset on reversal, emit REL_WHEEL per full 120.
                if (kernelAcc > 0 && chunk < 0) || (kernelAcc < 0 && chunk > 0) { kernelAcc = 0 }
                kernelAcc += chunk
                var events: [(EventCode, Int32)] = []
                let low = kernelAcc / 120
                if low != 0 {
                    events.append((.relWheel, Int32(low)))
                    kernelAcc -= low * 120
                    lowResTotal += low
                }
                events.append((.relWheelHiRes, Int32(chunk)))
                if Bool.random(using: &rng) { events.reverse() }
                let f = events.map { InputEvent(time: at(0), $0.0, $0.1) } + [InputEvent(time: at(0), .synReport, 0)]
                for case .slide(let d) in decoder.decode(f) { decoded += d }
            }
            #expect(decoded == lowResTotal)
        }
    }
}

@Suite struct PairedDecoderTests {
    @Test func theDecoderSeesThePairedPress() throws {
        let paired = PairedKnob.profiles([(try PairedKnob.encoder(), "e5"), (PairedKnob.pushSwitch(), "e6")])
        var decoder = SliderDecoder(profile: paired[1])
        #expect(decoder.hasLightPress && !decoder.isSliderCapable)
        #expect(decoder.decode(frame(0, (.mute, 1))) == [.lightPress])
    }

}
