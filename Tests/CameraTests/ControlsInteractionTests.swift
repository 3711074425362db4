import EvcaptureTesting
import Capture
@testable import Camera
import Testing

/// Scenarios of the controls interaction (docs/behaviour.md#controls-interaction), each driven
/// by a hand clock.
@Suite struct ControlsInteractionTests {
    @Test func lightPressActivatesAndIdleTimeoutDeactivates() {
        var c = core(appControls())
        #expect(c.nextDeadline == nil)
        #expect(states(c.handle(.lightPress, at: at(10))) == ["active:focus"])
        #expect(c.phase == .active(adjusting: false))
        #expect(c.nextDeadline == at(13))
        #expect(c.advance(to: at(12.999)).isEmpty)
        #expect(states(c.advance(to: at(13))) == ["inactive:focus"])
        #expect(c.phase == .inactive)
        #expect(c.nextDeadline == nil)
        #expect(c.control(named: "focus")?.value == 0)
    }

    @Test func slideThatActivatesAlsoChangesTheValue() {
        var c = core(appControls())
        let e = c.handle(.slide(1), at: at(1))
        #expect(states(e) == ["active:focus", "adjusting:focus"])
        #expect(values(e) == [0.2])  // (10 − 0) / 50 per detent
        #expect(c.phase == .active(adjusting: true))
        #expect(c.nextDeadline == at(2))  // adjusting ends after 1 s idle
        #expect(states(c.advance(to: at(2))) == ["adjusting-ended:focus"])
        #expect(c.phase == .active(adjusting: false))
        #expect(c.nextDeadline == at(4))
        #expect(states(c.advance(to: at(4))) == ["inactive:focus"])
    }

    @Test func adjustingLastsWhileSlidesKeepComing() {
        var c = core(appControls())
        _ = c.handle(.slide(1), at: at(0))
        #expect(states(c.handle(.slide(1), at: at(0.5))).isEmpty)
        #expect(states(c.handle(.slide(-1), at: at(1.2))).isEmpty)
        #expect(c.control(named: "focus")?.value == 0.2)
        #expect(c.nextDeadline == at(2.2))
        // handle() first runs the timeouts that are due: a slide after the adjusting idle re-enters it.
        let later = c.handle(.slide(1), at: at(2.5))
        #expect(states(later) == ["adjusting-ended:focus", "adjusting:focus"])
        #expect(c.nextDeadline == at(3.5))
    }

    @Test func lightPressWhileActiveOnlyKeepsItActive() {
        var c = core(appControls())
        _ = c.handle(.lightPress, at: at(0))
        #expect(states(c.handle(.lightPress, at: at(2))).isEmpty)  // 2 s apart: not a double press
        #expect(c.nextDeadline == at(5))
        #expect(c.advance(to: at(3)).isEmpty)
    }

    @Test func doublePressOpensSelectionSlidesMoveAndPressConfirms() {
        var c = core(appControls())
        #expect(states(c.handle(.lightPress, at: at(0))) == ["active:focus"])
        #expect(states(c.handle(.lightPress, at: at(0.3))) == ["selecting:focus"])
        #expect(c.phase == .selecting(highlighted: "focus"))
        #expect(states(c.handle(.slide(1), at: at(0.8))) == ["selection:iso"])
        #expect(states(c.handle(.slide(5), at: at(1.0))) == ["selection:wb"])  // stops at the end, no wrap
        #expect(states(c.handle(.slide(-1), at: at(1.2))) == ["selection:iso"])
        #expect(c.control(named: "focus")?.value == 0)  // selection slides change no value
        let confirm = c.handle(.lightPress, at: at(2))
        #expect(confirm.contains(.currentControl("iso")))
        #expect(states(confirm) == ["selected:iso"])
        #expect(c.currentControl?.name == "iso")
        let e = c.handle(.slide(1), at: at(3))
        #expect(states(e) == ["adjusting:iso"])
        #expect(values(e) == [200])
    }

    @Test func selectionSkipsDisabledControls() {
        var c = core(appControls())
        _ = c.setEnabled(false, named: "iso", at: at(0))
        _ = c.handle(.lightPress, at: at(0))
        _ = c.handle(.lightPress, at: at(0.1))
        #expect(states(c.handle(.slide(1), at: at(0.5))) == ["selection:wb"])
        #expect(states(c.handle(.slide(-1), at: at(0.6))) == ["selection:focus"])
    }

    @Test func selectionLeftOpenIsCancelledByTheIdleTimeout() {
        var c = core(appControls())
        _ = c.handle(.lightPress, at: at(0))
        _ = c.handle(.lightPress, at: at(0.2))
        _ = c.handle(.slide(1), at: at(0.5))
        #expect(states(c.advance(to: at(3.5))) == ["selected:focus", "inactive:focus"])
        #expect(c.currentControl?.name == "focus")
    }

    @Test func doublePressWhileAdjustingLeavesAdjustingFirst() {
        var c = core(appControls())
        _ = c.handle(.slide(2), at: at(0))
        _ = c.handle(.lightPress, at: at(0.2))
        #expect(states(c.handle(.lightPress, at: at(0.4))) == ["adjusting-ended:focus", "selecting:focus"])
    }

    @Test func confirmThenQuickPressReopensSelection() {
        var c = core(appControls())
        _ = c.handle(.lightPress, at: at(0))
        _ = c.handle(.lightPress, at: at(0.2))
        #expect(states(c.handle(.lightPress, at: at(1))) == ["selected:focus"])
        #expect(states(c.handle(.lightPress, at: at(1.2))) == ["selecting:focus"])
    }

    @Test func currentControlIsTheRememberedOne() {
        var c = core(appControls(), remembered: "wb")
        #expect(states(c.handle(.lightPress, at: at(0))) == ["active:wb"])
        let e = c.handle(.slide(1), at: at(0.5))
        #expect(values(e) == [1])
        #expect(!e.contains(.currentControl("wb")))  // already remembered: nothing to persist
        // A remembered name that is not (yet) present falls back to the first control…
        var d = core(appControls(), remembered: "exposure-bias")
        #expect(d.currentControl?.name == "focus")
        // …and wins once it is added.
        _ = try! d.removeControl(named: "wb", at: at(0))
        _ = try! d.addControl(.slider(name: "exposure-bias", title: "EV", symbolName: "x", values: [-1, 0, 1], value: 0), at: at(0))
        #expect(d.currentControl?.name == "exposure-bias")
    }

    @Test func slidingTheFirstControlRemembersIt() {
        var c = core(appControls())
        #expect(c.handle(.slide(1), at: at(0)).contains(.currentControl("focus")))
        #expect(c.rememberedControl == "focus")
    }

    @Test func externalChangeIsFollowedAndTheNextSlideStartsFromIt() {
        var c = core(appControls())
        let e = c.controlValueChangedExternally(named: "iso", to: 800, at: at(0))
        #expect(e == [.value(ControlValueChange(control: "iso", value: 800, origin: .external, time: at(0)))])
        #expect(c.phase == .inactive)  // an app's change shows nothing
        // The same value again reports nothing.
        #expect(c.controlValueChangedExternally(named: "iso", to: 800, at: at(0)).isEmpty)
        var d = core(appControls(), remembered: "iso")
        _ = d.controlValueChangedExternally(named: "iso", to: 400, at: at(0))
        #expect(values(d.handle(.slide(1), at: at(1))) == [800])
        // Off-list values move to the neighbouring listed value.
        _ = d.controlValueChangedExternally(named: "focus", to: 4.95, at: at(1))
        #expect(d.control(named: "focus")?.value == 4.95)
    }

    @Test func disabledCurrentControlDoesNotChange() {
        var c = core(appControls())
        _ = c.setEnabled(false, named: "focus", at: at(0))
        let e = c.handle(.slide(3), at: at(0))
        #expect(states(e) == ["active:focus"])  // shown (disabled controls stay visible) …
        #expect(values(e).isEmpty)  // … but not changed
        // A double press opens the selection on the first enabled control.
        _ = c.handle(.lightPress, at: at(0.5))
        #expect(states(c.handle(.lightPress, at: at(0.6))) == ["selecting:iso"])
    }

    @Test func withoutControlsInputsDoNothing() {
        var c = ControlsCore()
        #expect(c.handle(.lightPress, at: at(0)).isEmpty)
        #expect(c.handle(.slide(4), at: at(0)).isEmpty)
        #expect(c.phase == .inactive)
    }

    @Test func slideAtTheEndStillShowsTheSliderButReportsNoValue() {
        var c = core(appControls())
        let e = c.handle(.slide(-1), at: at(0))
        #expect(states(e) == ["active:focus", "adjusting:focus"])
        #expect(values(e).isEmpty)
    }

    @Test func configurableTimeouts() {
        var config = ControlsConfiguration()
        config.idleTimeout = .seconds(10)
        config.adjustingTimeout = .milliseconds(250)
        var c = core(appControls(), configuration: config)
        _ = c.handle(.slide(1), at: at(0))
        #expect(c.nextDeadline == at(0.25))
        #expect(states(c.advance(to: at(0.25))) == ["adjusting-ended:focus"])
        #expect(c.nextDeadline == at(10))
    }

    @Test func accelerationIsOffByDefaultAndFollowsItsCurve() {
        var plain = core(appControls())
        for i in 0..<10 { _ = plain.handle(.slide(1), at: at(Double(i) * 0.01)) }
        #expect(plain.control(named: "focus")?.value == 2)  // 10 detents × 0.2

        let curve = SliderAcceleration(startRate: 15, maxMultiplier: 4, window: .milliseconds(250))
        #expect(curve.steps(for: 1, sincePrevious: nil) == 1)
        #expect(curve.steps(for: 1, sincePrevious: .milliseconds(100)) == 1)  // 10/s
        #expect(curve.steps(for: 1, sincePrevious: .milliseconds(30)) == 2)  // 33/s
        #expect(curve.steps(for: -1, sincePrevious: .milliseconds(20)) == -3)  // 50/s
        #expect(curve.steps(for: 1, sincePrevious: .milliseconds(1)) == 4)  // capped
        #expect(curve.steps(for: 1, sincePrevious: .milliseconds(300)) == 1)  // outside the window
        var config = ControlsConfiguration()
        config.acceleration = curve
        var fast = core(appControls(), configuration: config)
        for i in 0..<10 { _ = fast.handle(.slide(1), at: at(Double(i) * 0.01)) }
        #expect(fast.control(named: "focus")?.value == 7.4)  // 1 + 9 × 4 = 37 steps of 0.2
    }

    @Test func removingTheShownControlWhileActiveShowsTheNextOne() {
        var c = core(appControls())
        _ = c.handle(.lightPress, at: at(0))
        let e = try! c.removeControl(named: "focus", at: at(1))
        #expect(e.contains(.controlsChanged(["iso", "wb"])))
        #expect(states(e) == ["active:iso"])
        #expect(throws: ControlsConfigurationError.noSuchControl("focus")) { try c.removeControl(named: "focus", at: at(1)) }
    }
}

/// The session's configuration API (docs/behaviour.md#controls).
@Suite struct ControlsConfigurationTests {
    @Test func fullSessionRefusesMore() {
        var config = ControlsConfiguration()
        config.maxControlsCount = 2
        var c = ControlsCore(configuration: config)
        let list = appControls()
        _ = try! c.addControl(list[0], at: at(0))
        #expect(c.canAddControl(list[1]))
        _ = try! c.addControl(list[1], at: at(0))
        #expect(!c.canAddControl(list[2]))
        #expect(throws: ControlsConfigurationError.full(max: 2)) { try c.addControl(list[2], at: at(0)) }
        #expect(c.maxControlsCount == 2)
    }

    @Test func secondSystemSliderOnTheSameCameraIsRefused() throws {
        let cam = FakeCamera.uvc(identity: "cam-a")
        let sameIdentity = FakeCamera.uvc(identity: "cam-a")
        let other = FakeCamera.uvc(identity: "cam-b")
        var c = ControlsCore()
        _ = try c.addControl(try Control.systemZoomSlider(camera: cam), at: at(0))
        var second = try Control.systemZoomSlider(camera: sameIdentity)
        second.name = "zoom-2"
        #expect(!c.canAddControl(second))
        #expect(throws: ControlsConfigurationError.duplicateSystemControl(kind: "zoom", camera: "cam-a")) {
            try c.addControl(second, at: at(0))
        }
        var otherZoom = try Control.systemZoomSlider(camera: other)
        otherZoom.name = "zoom-b"
        #expect(c.canAddControl(otherZoom))
        // Exposure bias on the same camera is a different system control: allowed once.
        let bias = try Control.systemExposureBiasSlider(camera: cam)
        #expect(c.canAddControl(bias))
        _ = try c.addControl(bias, at: at(0))
        var bias2 = try Control.systemExposureBiasSlider(camera: cam)
        bias2.name = "ev2"
        #expect(!c.canAddControl(bias2))
        // Same name twice.
        #expect(throws: ControlsConfigurationError.duplicateName("zoom")) {
            try c.addControl(try Control.systemZoomSlider(camera: other), at: at(0))
        }
    }

    @Test func configurationAppliesAtCommit() {
        var c = core(appControls())
        c.beginConfiguration()
        #expect(try! c.removeControl(named: "focus", at: at(0)).isEmpty)
        #expect(try! c.addControl(.slider(name: "gain", title: "Gain", symbolName: "g", range: 0...1, value: 0), at: at(0)).isEmpty)
        #expect(c.controls.map(\.name) == ["focus", "iso", "wb"])  // nothing yet
        // Validation runs against the pending set: the removed name is free again.
        #expect(c.canAddControl(.slider(name: "focus", title: "F", symbolName: "f", range: 0...1, value: 0)))
        let e = c.commitConfiguration(at: at(1))
        #expect(e == [.controlsChanged(["iso", "wb", "gain"])])
        #expect(c.controls.map(\.name) == ["iso", "wb", "gain"])
    }
}
