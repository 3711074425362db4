import Capture
import EvcaptureTesting
import Evdev
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
