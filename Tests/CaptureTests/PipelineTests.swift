@testable import Capture
import EvcaptureTesting
import Vocabulary
import Testing

/// The pipeline's own policy, on a hand-driven clock: key releases the kernel made up
/// (`input_dev_release_keys`, SYN_REPORT 1) wait for the removal that usually follows.
@Suite struct PipelineTests {
    static func key(_ code: EventCode, _ value: Int32, _ t: Timestamp) -> InputEvent { InputEvent(time: t, code, value) }

    /// A pipeline with the gpio test device, the session running and its key down at 0 ms.
    static func pressed() -> (Pipeline, Int, [String]) {
        var log: [String] = []
        var p = Pipeline(settings: CaptureCoreSettings())
        let index = p.addDevice(TestDevices.gpio, at: ms(0)) { _ in }
        p.sessionStarted(at: ms(0)) { _ in }
        p.handle(Frame(events: [key(.volumeDown, 1, ms(0))], time: ms(0)), device: index, now: ms(0)) { log += lines($0) }
        return (p, index, log)
    }

    static func lines(_ e: PipelineEvent) -> [String] {
        guard case .capture(let c) = e else { return [] }
        return ["\(c.time.microseconds / 1000)ms \(c.phase.rawValue)" + (c.reason.map { " \($0.rawValue)" } ?? "")]
    }

    static let kernelRelease = Frame(events: [key(.volumeDown, 0, ms(100))], time: ms(100), reportValue: 1)

    @Test func aKernelReleaseThenRemovalIsAnUnplug() {
        var (p, index, log) = Self.pressed()
        p.handle(Self.kernelRelease, device: index, now: ms(100)) { log += Self.lines($0) }
        #expect(log == ["0ms began"])
        #expect(p.nextDeadline == ms(500))  // the hold threshold comes first
        p.fireDeadlines(through: ms(1099)) { log += Self.lines($0) }
        #expect(p.nextDeadline == ms(1100))
        // Removed just before the grace ends: nobody let go of the key.
        p.removeDevice(index, at: ms(1099)) { log += Self.lines($0) }
        #expect(log == ["0ms began", "500ms held", "1099ms cancelled device-removed"])
        #expect(p.nextDeadline == nil)
    }

    @Test func aKernelReleaseWithoutRemovalIsLostEventsWhenTheGraceEnds() {
        var (p, index, log) = Self.pressed()
        p.handle(Self.kernelRelease, device: index, now: ms(100)) { log += Self.lines($0) }
        p.fireDeadlines(through: ms(1100)) { log += Self.lines($0) }
        #expect(log == ["0ms began", "500ms held", "1100ms cancelled events-lost"])
        p.removeDevice(index, at: ms(1200)) { log += Self.lines($0) }
        #expect(log.count == 3)
    }

    @Test func theDevicesNextFrameDecidesAKernelReleaseAtOnce() {
        var (p, index, log) = Self.pressed()
        p.handle(Self.kernelRelease, device: index, now: ms(100)) { log += Self.lines($0) }
        p.handle(Frame(events: [Self.key(.volumeDown, 1, ms(300))], time: ms(300)), device: index, now: ms(300)) {
            log += Self.lines($0)
        }
        #expect(log == ["0ms began", "300ms cancelled events-lost", "300ms began"])
    }

    @Test func aPersonsReleaseIsNotHeld() {
        var (p, index, log) = Self.pressed()
        p.handle(Frame(events: [Self.key(.volumeDown, 0, ms(100))], time: ms(100)), device: index, now: ms(100)) {
            log += Self.lines($0)
        }
        #expect(log == ["0ms began", "100ms ended"])
    }
}

/// A launched session (docs/behaviour.md#the-capture-session): a launch button opens it, idle
/// closes it; on a manual clock.
@Suite struct LaunchedSessionTests {
    static let policy = SessionPolicy(mode: .launch, launchButton: .camera, idleStop: .seconds(60))
    static let cam = TestDevices.profile("cam", roles: [.camera: .primary, .volumeDown: .primary])

    static func lines(_ e: PipelineEvent) -> [String] {
        switch e {
        case .capture(let c): ["\(c.time.microseconds / 1000)ms \(c.phase.rawValue) \(c.button.name)"]
        case .session(let s): ["\(s.time.microseconds / 1000)ms session \(s.state.rawValue) \(s.reason ?? "")"]
        default: []
        }
    }

    static func key(_ p: inout Pipeline, _ index: Int, _ code: EventCode, _ value: Int32, _ t: Int, _ log: inout [String]) {
        p.handle(Frame(events: [InputEvent(time: ms(t), code, value)], time: ms(t)), device: index, now: ms(t)) { log += lines($0) }
    }

    @Test func theLaunchButtonOpensTheSessionWithoutTakingAPhoto() {
        var log: [String] = []
        var p = Pipeline(settings: CaptureCoreSettings(), session: Self.policy)
        let i = p.addDevice(Self.cam, at: ms(0)) { _ in }
        // Before the launch: presses are nothing.
        Self.key(&p, i, .volumeDown, 1, 10, &log)
        Self.key(&p, i, .volumeDown, 0, 20, &log)
        #expect(log.isEmpty && !p.isRunning)
        // The launch press starts the session; it is ignored until released, so no capture.
        Self.key(&p, i, .camera, 1, 100, &log)
        Self.key(&p, i, .camera, 0, 150, &log)
        #expect(log == ["100ms session started launch"] && p.isRunning)
        // The next press of the same key is a capture.
        Self.key(&p, i, .camera, 1, 300, &log)
        Self.key(&p, i, .camera, 0, 350, &log)
        #expect(log.suffix(2) == ["300ms began KEY_CAMERA", "350ms ended KEY_CAMERA"])
    }

    @Test func idleStopsTheSessionAtItsDeadlineNotBefore() {
        var log: [String] = []
        var p = Pipeline(settings: CaptureCoreSettings(), session: Self.policy)
        let i = p.addDevice(Self.cam, at: ms(0)) { _ in }
        Self.key(&p, i, .camera, 1, 100, &log)
        Self.key(&p, i, .camera, 0, 200, &log)  // the last input: idle counts from here
        #expect(p.nextDeadline == ms(60_200))
        p.fireDeadlines(through: ms(60_199)) { log += Self.lines($0) }
        #expect(p.isRunning)
        p.fireDeadlines(through: ms(60_200)) { log += Self.lines($0) }
        #expect(!p.isRunning && log.last == "60200ms session stopped idle")
        // Stopped: no idle deadline, and presses are nothing again until the next launch.
        #expect(p.nextDeadline == nil)
        Self.key(&p, i, .volumeDown, 1, 61_000, &log)
        #expect(log.last == "60200ms session stopped idle")
    }

    @Test func aPressHeldPastTheIdleTimeKeepsTheSessionOpen() {
        var log: [String] = []
        var p = Pipeline(settings: CaptureCoreSettings(), session: Self.policy)
        let i = p.addDevice(Self.cam, at: ms(0)) { _ in }
        Self.key(&p, i, .camera, 1, 0, &log)
        Self.key(&p, i, .camera, 0, 10, &log)
        Self.key(&p, i, .volumeDown, 1, 1_000, &log)  // held for 100 s
        p.fireDeadlines(through: ms(61_000)) { log += Self.lines($0) }
        #expect(p.isRunning, "\(log)")
        Self.key(&p, i, .volumeDown, 0, 101_000, &log)
        p.fireDeadlines(through: ms(161_000)) { log += Self.lines($0) }
        #expect(log.last == "161000ms session stopped idle", "\(log)")
    }

    @Test func anAlwaysSessionNeverStopsForIdleness() {
        var p = Pipeline(settings: CaptureCoreSettings())
        p.sessionStarted(at: ms(0)) { _ in }
        #expect(p.idleDeadline == nil && p.nextDeadline == nil)
        p.fireDeadlines(through: ms(10_000_000)) { _ in }
        #expect(p.isRunning)
    }
}
