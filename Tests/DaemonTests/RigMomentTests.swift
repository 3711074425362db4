import EvcaptureTesting
import LinuxIO
import Rig
import Testing
import Vocabulary
@testable import EvcaptureDaemon

/// docs/mqtt.md#clocks: a rig's press is taken at the rig's moment — the station's own press at
/// its `began` as the kernel gave it, another station's at its message's time, moved from the
/// wall clock once as it arrives; a press of this station alone has no rig moment, so its
/// photo is the frame its `photo-frame` says (a release's frame for `"release"`).
@Suite struct RigMomentTests {
    static let device = CaptureDevice(name: "keys", node: "/dev/input/event3", bus: .host)
    static let began = Timestamp(microseconds: 5_000_000_123)

    static func click(press: UInt64) -> CaptureEvent {
        CaptureEvent(
            phase: .ended, action: .primary, button: .volumeDown, device: device, press: PressID(rawValue: press),
            time: began + .milliseconds(300), began: began, gesture: .click)
    }

    @Test func aStationsOwnPressHasNoRigMoment() {
        // A daemon without a rig decides with this policy too: press times, no trigger ids.
        var alone = FanOutPolicy(station: "", sendsTriggers: false)
        let event = Self.click(press: 7)
        let decision = alone.handle(event, wallTime: event.time.wallSeconds)
        let triggers = ActionsStage.triggers(for: event, decision: decision)
        #expect(triggers.map(\.kind) == [.click, .ended])
        for trigger in triggers {
            #expect(trigger.rigMoment == nil, "\(trigger.kind): a lone press's photo-frame decides its moment")
            #expect(trigger.triggerID == nil)
            #expect(trigger.pressTime == Self.began)
        }
    }

    @Test func aFannedOutPressIsTakenAtItsBeganExactly() throws {
        var rig = FanOutPolicy(station: "cam-1", sendsTriggers: true)
        let event = Self.click(press: 7)
        let decision = rig.handle(event, wallTime: event.time.wallSeconds)
        let click = try #require(ActionsStage.triggers(for: event, decision: decision).first)
        #expect(click.kind == .click && click.triggerID == decision.trigger && click.triggerID != nil)
        // Not through the wall clock and back: the very microsecond the kernel stamped.
        #expect(click.rigMoment == Self.began)
    }

    @Test func aTriggerMessageIsMovedFromTheWallClockOnceAsItArrives() throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let link = try RigLinkTests.link(station: "cam-2", loop: loop)
        let pressed = wallClockNow() - 0.25
        let payload = Array(#"{"command":"photo","trigger":"cam-1-1-7","time":\#(pressed),"from":"cam-1"}"#.utf8)
        let accepted = try #require(link.accept(topic: "evcapture/all/trigger", payload: payload, now: wallClockNow()))
        let (command, trigger) = try accepted.get()
        #expect(command == .photo && trigger.triggerID == "cam-1-1-7")
        let moment = try #require(trigger.rigMoment)
        // The press instant on this machine's monotonic clock: a quarter of a second ago.
        let ago = monotonicNow().microseconds - moment.microseconds
        #expect(ago >= 250_000 && ago < 5_000_000, "\(ago) µs")
        // Its own time is its arrival, on the same clock (never the wall clock's seconds).
        let arrived = monotonicNow().microseconds - trigger.time.microseconds
        #expect(arrived >= 0 && arrived < ago, "arrived \(arrived) µs ago, pressed \(ago) µs ago")
    }
}
