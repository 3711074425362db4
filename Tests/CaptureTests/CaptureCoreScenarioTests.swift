import EvcaptureTesting
import Capture
import Vocabulary
import Testing

/// Scenario tests: each is steps on a hand-driven clock (ms) and the exact outputs.
@Suite struct CaptureCoreScenarioTests {
    @Test func clickIsBeganThenEndedBeforeTheHoldThreshold() {
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 100), .up("gpio", .volumeDown, 220)]) == [
                "100ms began primary KEY_VOLUMEDOWN #1",
                "220ms ended primary KEY_VOLUMEDOWN #1 click",
            ])
    }

    @Test func longPressIsReportedAtTheThresholdWhileStillHeld() {
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 1000), .advance(1499), .advance(1500), .up("gpio", .volumeDown, 2400)])
                == [
                    "1000ms began primary KEY_VOLUMEDOWN #1",
                    "1500ms held primary KEY_VOLUMEDOWN #1 long-press",
                    "2400ms ended primary KEY_VOLUMEDOWN #1",
                ])
    }

    @Test func aLateTimerStillReportsTheLongPressAtTheThresholdAndBeforeTheRelease() {
        // The caller never called advance: the release frame fires the deadline first.
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 1000), .up("gpio", .volumeDown, 2400)]) == [
                "1000ms began primary KEY_VOLUMEDOWN #1",
                "1500ms held primary KEY_VOLUMEDOWN #1 long-press",
                "2400ms ended primary KEY_VOLUMEDOWN #1",
            ])
    }

    @Test func releaseExactlyAtTheThresholdIsALongPress() {
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 0), .up("gpio", .volumeDown, 500)]) == [
                "0ms began primary KEY_VOLUMEDOWN #1",
                "500ms held primary KEY_VOLUMEDOWN #1 long-press",
                "500ms ended primary KEY_VOLUMEDOWN #1",
            ])
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 0), .up("gpio", .volumeDown, 499)]).last
                == "499ms ended primary KEY_VOLUMEDOWN #1 click")
    }

    @Test func holdThresholdIsConfigurable() {
        let settings = CaptureCoreSettings(holdThreshold: .seconds(1))
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 0), .advance(900), .up("gpio", .volumeDown, 950)], settings: settings)
                == ["0ms began primary KEY_VOLUMEDOWN #1", "950ms ended primary KEY_VOLUMEDOWN #1 click"])
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 0), .advance(1000)], settings: settings).last
                == "1000ms held primary KEY_VOLUMEDOWN #1 long-press")
    }

    @Test func autorepeatAddsNothing() {
        #expect(
            run([
                .start(0), .down("gpio", .volumeDown, 0), .autorepeat("gpio", .volumeDown, 250),
                .autorepeat("gpio", .volumeDown, 283), .autorepeat("gpio", .volumeDown, 316), .up("gpio", .volumeDown, 400),
                .autorepeat("gpio", .volumeDown, 450),
            ]) == ["0ms began primary KEY_VOLUMEDOWN #1", "400ms ended primary KEY_VOLUMEDOWN #1 click"])
    }

    @Test func nothingEndsThatDidNotBegin() {
        #expect(run([.start(0), .up("gpio", .volumeDown, 100), .up("gpio", .volumeUp, 100)]) == [])
        // A second press without a release is not a new press.
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 0), .down("gpio", .volumeDown, 10), .up("gpio", .volumeDown, 20)])
                == ["0ms began primary KEY_VOLUMEDOWN #1", "20ms ended primary KEY_VOLUMEDOWN #1 click"])
    }

    @Test func aKeyDownWhenTheSessionStartsIsIgnoredUntilReleased() {
        #expect(
            run([
                .down("gpio", .volumeDown, 0), .start(100), .advance(1000), .up("gpio", .volumeDown, 1200),
                .down("gpio", .volumeDown, 1300), .up("gpio", .volumeDown, 1400),
            ]) == ["1300ms began primary KEY_VOLUMEDOWN #1", "1400ms ended primary KEY_VOLUMEDOWN #1 click"])
    }

    @Test func aKeyDownWhenItsDeviceIsAddedToARunningSessionIsIgnoredUntilReleased() {
        var core = CaptureCore()
        var out: [CaptureEvent] = []
        core.sessionStarted(now: ms(0), into: &out)
        let gpio = core.addDevice(TestDevices.gpio, keysDown: [.volumeDown])
        core.handle(frame: [InputEvent(time: ms(50), .volumeDown, 0)], device: gpio, now: ms(50), into: &out)
        core.handle(frame: [InputEvent(time: ms(60), .volumeDown, 1)], device: gpio, now: ms(60), into: &out)
        #expect(out.map(line) == ["60ms began primary KEY_VOLUMEDOWN #1"])
    }

    @Test func pressesDoNotBeginWhileTheSessionIsNotRunning() {
        #expect(run([.down("gpio", .volumeDown, 0), .up("gpio", .volumeDown, 100)]) == [])
        #expect(
            run([.start(0), .stop(50), .down("gpio", .volumeDown, 100), .up("gpio", .volumeDown, 200)]) == [])
    }

    @Test func stoppingOrPausingTheSessionCancelsPressesInFlight() {
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 100), .stop(200), .up("gpio", .volumeDown, 300)]) == [
                "100ms began primary KEY_VOLUMEDOWN #1",
                "200ms cancelled primary KEY_VOLUMEDOWN #1 (session-stopped)",
            ])
        // Paused, then resumed while the key is still down: ignored until released.
        #expect(
            run([
                .start(0), .down("gpio", .volumeDown, 100), .pause(200), .start(300), .up("gpio", .volumeDown, 400),
                .down("gpio", .volumeDown, 500), .up("gpio", .volumeDown, 600),
            ]) == [
                "100ms began primary KEY_VOLUMEDOWN #1",
                "200ms cancelled primary KEY_VOLUMEDOWN #1 (session-paused)",
                "500ms began primary KEY_VOLUMEDOWN #2",
                "600ms ended primary KEY_VOLUMEDOWN #2 click",
            ])
    }

    @Test func aLongPressThatPassedBeforeTheStopIsReportedBeforeTheCancellation() {
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 0), .stop(800)]) == [
                "0ms began primary KEY_VOLUMEDOWN #1",
                "500ms held primary KEY_VOLUMEDOWN #1 long-press",
                "800ms cancelled primary KEY_VOLUMEDOWN #1 (session-stopped)",
            ])
    }

    @Test func removingADeviceCancelsOnlyItsPresses() {
        #expect(
            run([
                .start(0), .down("gpio", .volumeDown, 0), .down("headset", .playCD, 10), .remove("headset", 100),
                .up("gpio", .volumeDown, 200),
            ]) == [
                "0ms began primary KEY_VOLUMEDOWN #1",
                "10ms began primary KEY_PLAYCD #2 sound",
                "100ms cancelled primary KEY_PLAYCD #2 sound (device-removed)",
                "200ms ended primary KEY_VOLUMEDOWN #1 click",
            ])
    }

    @Test func lostEventsCancelPressesOfThatDeviceAndLeaveDownKeysIgnoredUntilReleased() {
        #expect(
            run([
                .start(0), .down("gpio", .volumeDown, 0), .down("headset", .playCD, 10),
                // During the loss VOLUMEDOWN stayed down and VOLUMEUP went down.
                .lost("gpio", 100, [(.volumeUp, 1)]),
                .up("gpio", .volumeDown, 150), .up("gpio", .volumeUp, 160), .up("headset", .playCD, 170),
                .down("gpio", .volumeUp, 200), .up("gpio", .volumeUp, 250),
            ]) == [
                "0ms began primary KEY_VOLUMEDOWN #1",
                "10ms began primary KEY_PLAYCD #2 sound",
                "100ms cancelled primary KEY_VOLUMEDOWN #1 (events-lost)",
                "170ms ended primary KEY_PLAYCD #2 sound click",
                "200ms began primary KEY_VOLUMEUP #3",
                "250ms ended primary KEY_VOLUMEUP #3 click",
            ])
        // Released during the loss: cancelled, and the next press is a new one.
        #expect(
            run([
                .start(0), .down("gpio", .volumeDown, 0), .lost("gpio", 100, [(.volumeDown, 0)]),
                .down("gpio", .volumeDown, 200), .up("gpio", .volumeDown, 300),
            ]) == [
                "0ms began primary KEY_VOLUMEDOWN #1",
                "100ms cancelled primary KEY_VOLUMEDOWN #1 (events-lost)",
                "200ms began primary KEY_VOLUMEDOWN #2",
                "300ms ended primary KEY_VOLUMEDOWN #2 click",
            ])
    }

    @Test func secondaryPressesGoToTheSecondaryHandlerOrArePrimaryWithoutOne() {
        let steps: [Step] = [.start(0), .down("gpio", .volumeUp, 0), .up("gpio", .volumeUp, 100)]
        #expect(
            run(steps, settings: CaptureCoreSettings(hasSecondaryHandler: true)) == [
                "0ms began secondary KEY_VOLUMEUP #1", "100ms ended secondary KEY_VOLUMEUP #1 click",
            ])
        #expect(
            run(steps, settings: CaptureCoreSettings(hasSecondaryHandler: false)) == [
                "0ms began primary KEY_VOLUMEUP #1", "100ms ended primary KEY_VOLUMEUP #1 click",
            ])
    }

    @Test func theActionIsFixedAtBeganEvenIfRoutingChangesMidPress() {
        var core = CaptureCore(settings: CaptureCoreSettings(hasSecondaryHandler: true))
        var out: [CaptureEvent] = []
        let gpio = core.addDevice(TestDevices.gpio)
        core.sessionStarted(now: ms(0), into: &out)
        core.handle(frame: [InputEvent(time: ms(0), .volumeUp, 1)], device: gpio, now: ms(0), into: &out)
        core.settings.hasSecondaryHandler = false
        core.handle(frame: [InputEvent(time: ms(50), .volumeUp, 0)], device: gpio, now: ms(50), into: &out)
        #expect(out.map(line) == ["0ms began secondary KEY_VOLUMEUP #1", "50ms ended secondary KEY_VOLUMEUP #1 click"])
    }

    @Test func onlyHeadsetPressesPlayTheSound() {
        let lines = run([
            .start(0), .down("headset", .pauseCD, 0), .up("headset", .pauseCD, 120), .down("gpio", .volumeDown, 200),
            .up("gpio", .volumeDown, 300),
        ])
        #expect(
            lines == [
                "0ms began primary KEY_PAUSECD #1 sound", "120ms ended primary KEY_PAUSECD #1 sound click",
                "200ms began primary KEY_VOLUMEDOWN #2", "300ms ended primary KEY_VOLUMEDOWN #2 click",
            ])
    }

    @Test func doubleClickWhenEnabled() {
        let on = CaptureCoreSettings(doubleClickEnabled: true)
        let clicks: [Step] = [
            .start(0),
            .down("gpio", .volumeDown, 0), .up("gpio", .volumeDown, 100),  // click
            .down("gpio", .volumeDown, 350), .up("gpio", .volumeDown, 450),  // 250 ms later: double
            .down("gpio", .volumeDown, 600), .up("gpio", .volumeDown, 700),  // starts over: click
            .down("gpio", .volumeDown, 1100), .up("gpio", .volumeDown, 1200),  // 400 ms later: click
        ]
        #expect(
            run(clicks, settings: on) == [
                "0ms began primary KEY_VOLUMEDOWN #1", "100ms ended primary KEY_VOLUMEDOWN #1 click",
                "350ms began primary KEY_VOLUMEDOWN #2", "450ms ended primary KEY_VOLUMEDOWN #2 double-click",
                "600ms began primary KEY_VOLUMEDOWN #3", "700ms ended primary KEY_VOLUMEDOWN #3 click",
                "1100ms began primary KEY_VOLUMEDOWN #4", "1200ms ended primary KEY_VOLUMEDOWN #4 click",
            ])
        // Disabled (the default): every quick release is a click.
        #expect(run(clicks).filter { $0.contains("ended") }.allSatisfy { $0.hasSuffix(" click") })
        // The window is configurable, and another button does not pair.
        let wide = CaptureCoreSettings(doubleClickEnabled: true, doubleClickWindow: .milliseconds(500))
        #expect(run(clicks, settings: wide)[7] == "1200ms ended primary KEY_VOLUMEDOWN #4 double-click")
        #expect(
            run(
                [
                    .start(0), .down("gpio", .volumeDown, 0), .up("gpio", .volumeDown, 50), .down("headset", .playCD, 100),
                    .up("headset", .playCD, 150),
                ], settings: on
            ).last == "150ms ended primary KEY_PLAYCD #2 sound click")
        // A quick second press held past the threshold is a long press, not a double click.
        #expect(
            run(
                [
                    .start(0), .down("gpio", .volumeDown, 0), .up("gpio", .volumeDown, 50), .down("gpio", .volumeDown, 100),
                    .up("gpio", .volumeDown, 900),
                ], settings: on
            ).suffix(2) == ["600ms held primary KEY_VOLUMEDOWN #2 long-press", "900ms ended primary KEY_VOLUMEDOWN #2"])
    }

    @Test func simultaneousPressesAreIndependentAndDeadlinesFireInTimeOrder() {
        #expect(
            run([
                .start(0), .down("headset", .playCD, 0), .frame("gpio", 100, [(.volumeDown, 1), (.volumeUp, 1)]),
                .up("headset", .playCD, 700), .frame("gpio", 800, [(.volumeUp, 0), (.volumeDown, 0)]),
            ]) == [
                "0ms began primary KEY_PLAYCD #1 sound",
                "100ms began primary KEY_VOLUMEDOWN #2",
                "100ms began primary KEY_VOLUMEUP #3",
                "500ms held primary KEY_PLAYCD #1 sound long-press",
                "600ms held primary KEY_VOLUMEDOWN #2 long-press",
                "600ms held primary KEY_VOLUMEUP #3 long-press",
                "700ms ended primary KEY_PLAYCD #1 sound",
                "800ms ended primary KEY_VOLUMEUP #3",
                "800ms ended primary KEY_VOLUMEDOWN #2",
            ])
    }

    @Test func nextDeadlineIsTheEarliestPendingHoldThreshold() {
        var core = CaptureCore()
        var out: [CaptureEvent] = []
        let gpio = core.addDevice(TestDevices.gpio)
        #expect(core.nextDeadline == nil)
        core.sessionStarted(now: ms(0), into: &out)
        core.handle(frame: [InputEvent(time: ms(100), .volumeDown, 1)], device: gpio, now: ms(100), into: &out)
        #expect(core.nextDeadline == ms(600))
        core.advance(to: ms(600), into: &out)
        #expect(core.nextDeadline == nil)
    }

    @Test func framesWithSliderAndLightPressCodesGoToTheControlsWhileRunning() {
        #expect(
            run([
                .frame("knob", 0, [(.volumeUp, 1)]), .frame("knob", 5, [(.volumeUp, 0)]),  // not running: nothing
                .start(10),
                .frame("knob", 20, [(.volumeUp, 1)]), .frame("knob", 28, [(.volumeUp, 0)]),
                .frame("knob", 40, [(.volumeDown, 1)]), .frame("knob", 48, [(.volumeDown, 0)]),
                .frame("knob", 50, [(.mute, 1)]), .frame("knob", 60, [(.mute, 0)]),
                .frame("dial", 70, [(.relDial, -2)]), .frame("dial", 80, [(.btn0, 1)]),
                .frame("gpio", 90, [(.power, 1)]),  // ignore role
            ]) == [
                "20ms controls knob", "28ms controls knob", "40ms controls knob", "48ms controls knob",
                "50ms controls knob", "60ms controls knob", "70ms controls dial", "80ms controls dial",
            ])
    }

    @Test func timeNeverRunsBackwards() {
        #expect(
            run([.start(0), .down("gpio", .volumeDown, 100), .up("gpio", .volumeDown, 90)]) == [
                "100ms began primary KEY_VOLUMEDOWN #1", "100ms ended primary KEY_VOLUMEDOWN #1 click",
            ])
    }

    @Test func aRemovedDevicesSlotIsReusedWithFreshState() {
        var core = CaptureCore()
        var out: [CaptureEvent] = []
        core.sessionStarted(now: ms(0), into: &out)
        let a = core.addDevice(TestDevices.headset)
        core.handle(frame: [InputEvent(time: ms(0), .playCD, 1)], device: a, now: ms(0), into: &out)
        core.removeDevice(a, now: ms(10), into: &out)
        let b = core.addDevice(TestDevices.gpio)  // BlueZ re-creates nodes: slots get reused
        #expect(a != b)
        core.handle(frame: [InputEvent(time: ms(20), .volumeDown, 1)], device: b, now: ms(20), into: &out)
        #expect(
            out.map(line) == [
                "0ms began primary KEY_PLAYCD #1 sound", "10ms cancelled primary KEY_PLAYCD #1 sound (device-removed)",
                "20ms began primary KEY_VOLUMEDOWN #2",
            ])
    }
}
