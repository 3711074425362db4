import EvcaptureTesting
import Capture
@testable import Runtime
import Dispatch
import Vocabulary
import Synchronization
import Testing

/// Records what a handler saw, and when.
final class Recorder: Sendable {
    let seen = Mutex<[String]>([])
    func record(_ who: String, _ e: CaptureEvent) { seen.withLock { $0.append("\(who) \(e.phase.rawValue) #\(e.press)") } }
    var lines: [String] { seen.withLock { $0 } }
}

@Suite struct CaptureDispatcherTests {
    static let device = CaptureDevice(name: "gpio-keys", node: "/dev/input/event0", bus: .host)

    static func event(_ phase: CapturePhase, _ action: CaptureAction, _ press: UInt64) -> CaptureEvent {
        CaptureEvent(
            phase: phase, action: action, button: action == .primary ? .volumeDown : .volumeUp, device: device,
            press: PressID(rawValue: press), time: Timestamp(microseconds: 0),
            reason: phase == .cancelled ? .sessionStopped : nil)
    }

    /// Causality, not wall-clock bounds (this must hold on a loaded machine too): the primary
    /// handler's first call blocks its thread on a semaphore the test holds; while it is
    /// stuck, `deliver` still returns, the secondary handler handles its whole press, and the
    /// primary's later events wait in its queue, in order, until the test lets it go.
    @Test(.timeLimit(.minutes(1))) func aSlowHandlerBlocksNeitherTheCallerNorTheOtherHandlerAndKeepsItsOrder() async {
        let rec = Recorder()
        let primaryEntered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let interaction = CaptureEventInteraction(
            primary: { e in
                if e.press == PressID(rawValue: 1) && e.phase == .began {
                    primaryEntered.signal()
                    release.wait()  // blocks this handler's thread, not just its task
                }
                rec.record("primary", e)
            },
            secondary: { e in rec.record("secondary", e) })
        let dispatcher = CaptureDispatcher(interaction: interaction)
        // Primary press 1 and 3, secondary press 2, interleaved as the core would emit them.
        dispatcher.deliver(Self.event(.began, .primary, 1))
        let blocked = await Task.detached { primaryEntered.wait(timeout: .now() + 30) == .success }.value
        #expect(blocked, "the primary handler was never called")
        // The primary handler is stuck now; delivering returns all the same (were it waiting
        // for a handler, this test would hang here until its time limit).
        for e in [
            Self.event(.began, .secondary, 2), Self.event(.held, .primary, 1), Self.event(.ended, .secondary, 2),
            Self.event(.ended, .primary, 1), Self.event(.began, .primary, 3), Self.event(.cancelled, .primary, 3),
        ] {
            dispatcher.deliver(e)
        }
        // The secondary handler finishes its press while the primary one is still stuck...
        let secondaryDone = await eventually(seconds: 30) { rec.lines.contains("secondary ended #2") }
        #expect(secondaryDone, "the secondary handler did not finish while the primary one was blocked: \(rec.lines)")
        #expect(rec.lines == ["secondary began #2", "secondary ended #2"])
        // ...and the primary's events wait in its queue: the stuck one and the four behind it.
        #expect(dispatcher.pendingCount == 5)
        release.signal()
        await dispatcher.finish()
        #expect(
            rec.lines.filter { $0.hasPrefix("primary") } == [
                "primary began #1", "primary held #1", "primary ended #1", "primary began #3", "primary cancelled #3",
            ])
        #expect(rec.lines.filter { $0.hasPrefix("secondary") } == ["secondary began #2", "secondary ended #2"])
        #expect(rec.lines.firstIndex(of: "secondary ended #2")! < rec.lines.firstIndex(of: "primary began #1")!)
        #expect(dispatcher.pendingCount == 0)
    }

    @Test func withoutASecondaryHandlerEverythingGoesToThePrimaryOne() async {
        let rec = Recorder()
        let dispatcher = CaptureDispatcher(interaction: CaptureEventInteraction(handler: { rec.record("one", $0) }))
        // A core configured from this interaction reports secondary presses as primary.
        var core = CaptureCore(settings: CaptureCoreSettings(hasSecondaryHandler: dispatcher.interaction.hasSecondaryHandler))
        var out: [CaptureEvent] = []
        let gpio = core.addDevice(TestDevices.gpio)
        core.sessionStarted(now: ms(0), into: &out)
        core.handle(frame: [InputEvent(time: ms(0), .volumeUp, 1)], device: gpio, now: ms(0), into: &out)
        core.handle(frame: [InputEvent(time: ms(10), .volumeUp, 0)], device: gpio, now: ms(10), into: &out)
        dispatcher.deliver(out)
        await dispatcher.finish()
        #expect(rec.lines == ["one began #1", "one ended #1"])
        #expect(out.allSatisfy { $0.action == .primary })
    }

    @Test func disablingKeepsPressesWholeAndDropsNewOnes() async {
        let rec = Recorder()
        let interaction = CaptureEventInteraction(handler: { rec.record("h", $0) })
        let dispatcher = CaptureDispatcher(interaction: interaction)
        dispatcher.deliver(Self.event(.began, .primary, 1))
        interaction.isEnabled = false
        dispatcher.deliver(Self.event(.began, .primary, 2))  // not delivered
        dispatcher.deliver(Self.event(.ended, .primary, 1))  // delivered: #1 began while enabled
        interaction.isEnabled = true
        dispatcher.deliver(Self.event(.ended, .primary, 2))  // not delivered: its began was not
        dispatcher.deliver(Self.event(.ended, .primary, 9))  // never began
        await dispatcher.finish()
        #expect(rec.lines == ["h began #1", "h ended #1"])
        #expect(interaction.isEnabled)
    }

    @Test func manyEventsArriveInOrder() async {
        let rec = Recorder()
        let dispatcher = CaptureDispatcher(interaction: CaptureEventInteraction(handler: { rec.record("h", $0) }))
        for i in 1...2000 {
            dispatcher.deliver(Self.event(.began, .primary, UInt64(i)))
            dispatcher.deliver(Self.event(.ended, .primary, UInt64(i)))
        }
        await dispatcher.finish()
        let expected = (1...2000).flatMap { ["h began #\($0)", "h ended #\($0)"] }
        #expect(rec.lines == expected)
    }
}
