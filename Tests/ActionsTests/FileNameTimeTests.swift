import EvcaptureTesting
import Foundation
import Synchronization
import Testing
import V4L2
import Vocabulary
@testable import Actions
@testable import Frames
@testable import Recording

/// A camera of 64×48 YUYV frames every 20 ms, from the time it opened, for as long as it is read.
final class PictureFrameStream: FrameStream {
    let format = StreamFormat(width: 64, height: 48, pixelFormat: .yuyv, bytesPerLine: 128)
    let opened = monotonicNow().microseconds
    private var delivered = 0
    private let bytes = yuyvImage(width: 64, height: 48, stride: 128)

    func withNextFrame(timeout: Duration, _ body: (BorrowedFrame) -> Void) throws(StreamingError) {
        let time = opened + Int64(delivered) * 20_000
        let due = time - monotonicNow().microseconds
        if due > 0 { usleep(UInt32(due)) }
        bytes.withUnsafeBytes { raw in
            body(
                BorrowedFrame(
                    bytes: raw, sequence: UInt32(delivered), timestampMicroseconds: time,
                    timestampKind: FrameTimestampKind(isMonotonic: true, isStartOfExposure: true)))
        }
        delivered += 1
    }

    func close() {}
}

/// A file's name carries its press's time (docs/configuration.md, file name patterns): the
/// press's `began`, converted from CLOCK_MONOTONIC to the wall clock once, as `EVCAPTURE_TIME`
/// is; not the moment the worker got to the file.
@Suite struct FileNameTimeTests {
    static let press: PressID = 3

    /// The names `pattern` gives a file of the press made at `wall` (seconds since 1970), give
    /// or take 2 ms: the test's conversion of the press's time and the worker's read the clocks
    /// a little apart, which can cross the edge of a millisecond.
    static func names(_ pattern: FileNamePattern, at wall: Double, kind: String) -> Set<String> {
        Set((-2...2).map { pattern.name(time: wall + Double($0) / 1000, press: press, action: .primary, kind: kind) })
    }

    /// The file at `path` has one of the names `pattern` gives it at the press that `began`;
    /// its name.
    @discardableResult
    static func expectNamedAtPress(_ path: String, _ pattern: FileNamePattern, began: Timestamp, kind: String, suffix: String) -> String {
        let name = URL(fileURLWithPath: path).lastPathComponent
        let atPress = names(pattern, at: began.wallSeconds, kind: kind)
        #expect(atPress.contains(name), "\(name), not named at the press: \(atPress.sorted())")
        #expect(name.hasSuffix("-press\(press).\(suffix)"))
        return name
    }

    static func send(_ runner: ActionRunner, _ kind: ActionTrigger.Kind, at time: Timestamp, began: Timestamp) {
        var t = trigger(kind, press: press)
        t.shouldPlaySound = false
        t.time = time
        t.pressTime = began
        runner.handle(t)
    }

    /// A press 10 s ago, clicked 9.8 s ago, its photo taken now: named at the press, whether
    /// prepared at its `began` or taken at the click.
    @Test(arguments: [false, true])
    func aPhotosNameIsItsPressesTimeNotTheTimeTheWorkerTookIt(prepared: Bool) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now = monotonicNow()
        let began = now - .seconds(10)
        let released = now - .milliseconds(9_800)
        let ring = FakeRing(times: [began.microseconds, released.microseconds])
        let settings = CaptureSettings(devicePath: "/dev/null", outputDirectory: dir)
        let log = OutcomeLog()
        let runner = ActionRunner(
            configuration: ActionsConfiguration(
                capture: settings, bindings: [.primary: ActionBinding(photoOn: .click, videoOnLongPress: false)], sound: .off),
            logger: testLogger, onOutcome: log.add, photoFrames: ring)
        if prepared { Self.send(runner, .began, at: began, began: began) }
        Self.send(runner, .click, at: released, began: began)
        Self.send(runner, .ended, at: released, began: began)
        let saved = { log.all.compactMap { if case .photoSaved(let p, _) = $0 { p } else { nil } } }
        #expect(await eventually { saved().count == 1 }, "\(log.all)")
        await runner.shutdown()
        let photo = try #require(saved().first)
        let name = Self.expectNamedAtPress(photo.path, settings.photoPattern, began: began, kind: "photo", suffix: "jpg")
        #expect(!Self.names(settings.photoPattern, at: wallClockNow(), kind: "photo").contains(name))
        #expect(photo.frameTime == began, "the photo is the press's frame")
    }

    /// A long press that began 10 s ago (held past the threshold, its recording started only
    /// now): the video is named at the press, not when the video worker started it.
    @Test func aVideosNameIsItsPressesTimeNotTheTimeTheRecordingStarted() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let settings = CaptureSettings(devicePath: "fake-camera", outputDirectory: dir, videoFormat: .avi)
        let frames = FrameSource(
            settings: settings.stream, opener: FrameStreamOpener { _ throws(StreamingError) in PictureFrameStream() },
            logger: testLogger)
        let log = OutcomeLog()
        let runner = ActionRunner(
            configuration: ActionsConfiguration(
                capture: settings, bindings: [.primary: ActionBinding(photoOn: nil, videoOnLongPress: true)], sound: .off),
            frames: frames, logger: testLogger, onOutcome: log.add)
        let began = monotonicNow() - .seconds(10)
        Self.send(runner, .longPress, at: monotonicNow(), began: began)
        #expect(await eventually { log.all.contains { if case .videoStarted = $0 { true } else { false } } }, "\(log.all)")
        Self.send(runner, .ended, at: monotonicNow() + .milliseconds(100), began: began)
        let saved = { log.all.compactMap { if case .videoSaved(let v, _) = $0 { v } else { nil } } }
        #expect(await eventually { saved().count == 1 }, "\(log.all)")
        await runner.shutdown()
        let video = try #require(saved().first)
        Self.expectNamedAtPress(video.path, settings.videoPattern, began: began, kind: "video", suffix: "avi")
        #expect(video.frames > 0)
    }
}
