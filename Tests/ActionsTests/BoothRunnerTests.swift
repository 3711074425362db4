import EvcaptureTesting
import Foundation
import Synchronization
import Vocabulary
import Testing
@testable import Actions
import Recording
import V4L2
@testable import Frames

/// The runner's booth paths with a ring stand-in (docs/booth.md): a countdown a press
/// cancels, and a timelapse through a camera unplug and replug.
@Suite(.serialized) struct BoothRunnerTests {
    /// A ring that gives a frame at exactly the time asked for, or fails while unplugged.
    final class SwitchableRing: NearestFrameSource {
        let unplugged = Atomic<Bool>(false)
        /// µs between the time asked for and the frame given (a ring that lost the moment).
        let offset = Atomic<Int64>(0)
        /// µs between the camera's frames, for ``frameTime(nearest:)`` (0: no cadence known).
        let cadence = Atomic<Int64>(0)
        func frame(nearest time: Timestamp, timeout: Duration) throws(StreamingError) -> RingFrame {
            let time = time.microseconds + offset.load(ordering: .relaxed)
            if unplugged.load(ordering: .relaxed) { throw StreamingError(code: .deviceRemoved, context: "unplugged") }
            return RingFrame(
                frame: VideoFrame(
                    bytes: yuyvImage(width: 64, height: 48, stride: 128, shade: 10),
                    format: StreamFormat(width: 64, height: 48, pixelFormat: .yuyv, bytesPerLine: 128),
                    sequence: 0, timestampMicroseconds: time),
                timestampKind: FrameTimestampKind(isMonotonic: true, isStartOfExposure: false))
        }
        func frameTime(nearest time: Timestamp) -> Timestamp? {
            let cadence = cadence.load(ordering: .relaxed)
            guard cadence > 0 else { return nil }
            return FrameSource.frameTime(nearest: time, newest: Timestamp(microseconds: 0), interval: Double(cadence))
        }
    }

    func runner(
        _ booth: BoothBinding, ring: SwitchableRing?, log: OutcomeLog, continuing previous: ActionRunner? = nil
    ) throws -> (ActionRunner, String) {
        let dir = try temporaryDirectory()
        let settings = CaptureSettings(devicePath: "/dev/null", outputDirectory: dir, streamMode: .always, photoMoment: .press)
        let runner = ActionRunner(
            configuration: ActionsConfiguration(
                capture: ring == nil ? nil : settings,
                bindings: [.primary: ActionBinding(photoOn: .click, videoOnLongPress: false, booth: booth)], sound: .off),
            logger: testLogger, continuing: previous, onOutcome: log.add, photoFrames: ring)
        return (runner, dir)
    }

    func send(_ runner: ActionRunner, _ kind: ActionTrigger.Kind, press: PressID, at time: Int64 = monotonicMicroseconds()) {
        var t = trigger(kind, press: press)
        t.action = .primary
        t.shouldPlaySound = false
        t.time = Timestamp(microseconds: time)
        runner.handle(t)
    }

    func click(_ runner: ActionRunner, press: PressID) {
        let now = monotonicMicroseconds()
        send(runner, .began, press: press, at: now)
        send(runner, .click, press: press, at: now)
        send(runner, .ended, press: press, at: now)
    }

    @Test func aPressDuringTheCountdownCancelsItAndTakesNothing() async throws {
        let log = OutcomeLog()
        let (runner, _) = try runner(BoothBinding(countdown: 1), ring: SwitchableRing(), log: log)
        click(runner, press: 1)
        #expect(log.all.contains { if case .countdown(1, _, 1) = $0 { true } else { false } })
        click(runner, press: 2)
        #expect(log.all.contains { if case .countdownCancelled(1, 1) = $0 { true } else { false } })
        try await Task.sleep(for: .milliseconds(1500))
        #expect(!log.all.contains { if case .photoSaved = $0 { true } else { false } }, "\(log.all)")
        #expect(!log.all.contains { if case .countdown(_, _, 2) = $0 { true } else { false } }, "the cancelling press started a countdown")
        // Uncancelled, the next one shoots at its end: the frame at the shot's time.
        click(runner, press: 3)
        let shot = log.all.compactMap { if case .countdown(1, let s, 3) = $0 { s } else { nil } }.first
        #expect(
            await eventually(seconds: 3) { log.all.contains { if case .photoSaved(let p, 3) = $0 { p.frameTime == shot } else { false } } })
        await runner.shutdown()
    }

    /// `countdown = 0`, the range's low end: no countdown, the click's photo at once.
    @Test func aZeroCountdownIsAPlainPhoto() async throws {
        let log = OutcomeLog()
        let (runner, _) = try runner(BoothBinding(countdown: 0), ring: SwitchableRing(), log: log)
        #expect(runner.booth == nil)
        click(runner, press: 1)
        #expect(await eventually(seconds: 3) { log.all.contains { if case .photoSaved(_, 1) = $0 { true } else { false } } })
        #expect(!log.all.contains { if case .countdown = $0 { true } else { false } }, "\(log.all)")
        await runner.shutdown()
    }

    @Test func aTimelapseCountsMissedShotsWhileTheCameraIsAwayAndResumes() async throws {
        let log = OutcomeLog()
        let ring = SwitchableRing()
        let (runner, _) = try runner(BoothBinding(timelapse: 100_000), ring: ring, log: log)
        func reports() -> [TimelapseReport] { log.all.compactMap { if case .timelapse(let r) = $0 { r } else { nil } } }
        click(runner, press: 1)
        let start = try #require(reports().first { $0.state == .started }?.next?.microseconds)
        #expect(await eventually(seconds: 3) { reports().filter { $0.state == .shot }.count >= 3 })
        ring.unplugged.store(true, ordering: .relaxed)
        #expect(await eventually(seconds: 3) { reports().filter { $0.state == .missed }.count >= 3 })
        ring.unplugged.store(false, ordering: .relaxed)
        let shotsBefore = reports().filter { $0.state == .shot }.count
        #expect(await eventually(seconds: 3) { reports().filter { $0.state == .shot }.count >= shotsBefore + 3 })
        click(runner, press: 2)
        let stopped = try #require(reports().first { $0.state == .stopped })
        #expect(stopped.press == 1)
        #expect(stopped.missed >= 3 && stopped.count >= 6, "\(stopped)")
        // Every photo is the frame of its own slot on the schedule: start + n × 100 ms.
        for r in reports() where r.state == .shot {
            let t = try #require(r.photo?.frameTime?.microseconds)
            #expect((t - start) % 100_000 == 0, "frame \(t) off the schedule from \(start)")
        }
        let taken = reports().filter { $0.state == .shot }.count
        try await Task.sleep(for: .milliseconds(300))
        #expect(reports().filter { $0.state == .shot }.count <= taken + 1, "shots after the stop")
        await runner.shutdown()
    }

    /// The daemon makes a new runner when a camera appears: a timelapse started before
    /// (its shots missed: no camera) goes on with the new runner's camera, on the same
    /// schedule and with the same counts, and its next click stops it.
    @Test func aTimelapseStartedBeforeAnyCameraGoesOnWhenTheCameraAppears() async throws {
        let log = OutcomeLog()
        func reports() -> [TimelapseReport] { log.all.compactMap { if case .timelapse(let r) = $0 { r } else { nil } } }
        let (before, _) = try runner(BoothBinding(timelapse: 100_000), ring: nil, log: log)
        click(before, press: 1)
        let start = try #require(reports().first { $0.state == .started }?.next?.microseconds)
        #expect(await eventually(seconds: 3) { reports().filter { $0.state == .missed }.count >= 2 })
        #expect(reports().filter { $0.state == .shot }.isEmpty)
        // The camera appears: a runner with it replaces the one without.
        let (after, _) = try runner(BoothBinding(timelapse: 100_000), ring: SwitchableRing(), log: log, continuing: before)
        await before.shutdown()
        #expect(await eventually(seconds: 3) { reports().filter { $0.state == .shot }.count >= 3 }, "\(reports())")
        click(after, press: 2)
        let stopped = try #require(reports().first { $0.state == .stopped }, "the click started another timelapse: \(reports())")
        #expect(stopped.press == 1 && !reports().contains { $0.state == .started && $0.press == 2 })
        // Every slot is taken or missed, in order: the counts of each line follow on.
        let progress = reports().filter { $0.state == .shot || $0.state == .missed }
        for (n, r) in progress.enumerated() {
            #expect(r.count + r.missed == n + 1, "line \(n): \(r)")
            if let t = r.photo?.frameTime?.microseconds { #expect(t == start + Int64(n) * 100_000, "shot \(n): frame \(t)") }
        }
        #expect(stopped.count + stopped.missed >= progress.count, "\(stopped)")
        await after.shutdown()
    }

    /// A timelapse starts on the camera's frames: its first shot at the frame nearest the
    /// press, so shots a whole number of frame intervals apart fall on frames; with no
    /// cadence known (the ring holds no frames yet), at the press itself.
    @Test(arguments: [0, 1, 99_999, 100_000, 100_001, 199_999])
    func aTimelapseStartsOnTheFrameNearestThePress(phase: Int64) async throws {
        let log = OutcomeLog()
        let ring = SwitchableRing()
        ring.cadence.store(200_000, ordering: .relaxed)
        let (runner, _) = try runner(BoothBinding(timelapse: 400_000), ring: ring, log: log)
        func reports() -> [TimelapseReport] { log.all.compactMap { if case .timelapse(let r) = $0 { r } else { nil } } }
        // A press `phase` µs after a frame (frames every 200 ms from time 0).
        let press = (monotonicMicroseconds() / 200_000 + 1) * 200_000 + phase
        send(runner, .began, press: 1, at: press)
        send(runner, .click, press: 1, at: press)
        let start = try #require(reports().first { $0.state == .started }?.next?.microseconds)
        // Half way (100 ms) goes to the later frame.
        #expect(start == press - phase + (phase >= 100_000 ? 200_000 : 0), "press \(press): started at \(start)")
        send(runner, .click, press: 2, at: press + 1)
        // No cadence: the press's own moment.
        ring.cadence.store(0, ordering: .relaxed)
        send(runner, .click, press: 3, at: press + 2)
        #expect(reports().last { $0.state == .started }?.next?.microseconds == press + 2, "\(reports())")
        send(runner, .click, press: 4, at: press + 3)
        await runner.shutdown()
    }

    @Test func aTimelapseShotWhoseFrameIsOfAnotherMomentIsMissedNotSaved() async throws {
        let log = OutcomeLog()
        let ring = SwitchableRing()
        ring.offset.store(50_001, ordering: .relaxed)  // just past half the 100 ms interval
        let (runner, dir) = try runner(BoothBinding(timelapse: 100_000), ring: ring, log: log)
        func reports() -> [TimelapseReport] { log.all.compactMap { if case .timelapse(let r) = $0 { r } else { nil } } }
        click(runner, press: 1)
        #expect(await eventually(seconds: 3) { reports().filter { $0.state == .missed }.count >= 2 })
        #expect(reports().filter { $0.state == .shot }.isEmpty)
        ring.offset.store(50_000, ordering: .relaxed)  // exactly half: still this slot's frame
        #expect(await eventually(seconds: 3) { reports().filter { $0.state == .shot }.count >= 2 })
        click(runner, press: 2)
        await runner.shutdown()
        let photos = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".jpg") }
        // Only the shots' photos (one may have been in flight at the stop): none of the missed ones.
        let shots = reports().filter { $0.state == .shot }.count
        #expect(photos.count >= shots && photos.count <= shots + 1, "\(photos) for \(shots) shots")
    }
}
