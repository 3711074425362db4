@testable import Evdev
import Vocabulary
import Testing

/// Which frames are keys released by the kernel (unplug, reset) rather than by a person.
@Suite struct FrameTests {
    static let t = Timestamp(microseconds: 5_000_000)
    static func key(_ code: EventCode, _ value: Int32) -> InputEvent { InputEvent(time: t, code, value) }

    @Test func keyUpsClosedBySynReportOneAreTheKernels() {
        // input_dev_release_keys at unplug or reset: key-ups, then SYN_REPORT 1.
        #expect(Frame(events: [Self.key(.volumeDown, 0)], time: Self.t, reportValue: 1).releasedByKernel)
        #expect(Frame(events: [Self.key(.volumeDown, 0), Self.key(.volumeUp, 0)], time: Self.t, reportValue: 1).releasedByKernel)
    }

    @Test func devicesOwnFramesAndAutorepeatAreNot() {
        // A person's release (SYN_REPORT 0).
        #expect(!Frame(events: [Self.key(.volumeDown, 0)], time: Self.t).releasedByKernel)
        // Kernel autorepeat: value 2, SYN_REPORT 1.
        #expect(!Frame(events: [Self.key(.volumeDown, 2)], time: Self.t, reportValue: 1).releasedByKernel)
        // A relative axis with SYN_REPORT 1 has no key to release.
        #expect(!Frame(events: [InputEvent(time: Self.t, .relX, 1)], time: Self.t, reportValue: 1).releasedByKernel)
        // A resync after SYN_DROPPED is its own case (events lost).
        let resync = Resync(changedKeys: [.volumeDown: false], keysDown: [])
        #expect(!Frame(events: [Self.key(.volumeDown, 0)], time: Self.t, resync: resync, reportValue: 1).releasedByKernel)
    }

    @Test func recordingsKeepTheSynReportValue() {
        let events = [Self.key(.volumeDown, 0), InputEvent(time: Self.t, .synReport, 1)]
        let frames = Frame.split(events)
        #expect(frames.count == 1 && frames[0].reportValue == 1 && frames[0].releasedByKernel)
        #expect(frames[0].eventsWithReport == events)
    }
}
