import EvcaptureTesting
import Vocabulary
import Foundation
import Logging
import Synchronization
import Testing
import V4L2

@testable import EvcaptureDaemon
import Camera
import Actions
import Output
import ConfigFile
import Frames
import Recording

/// Photos, recordings and the action runner on vivid's capture node (real V4L2 streaming,
/// real MJPEG encoding); the files are checked with ffprobe, an independent decoder.
@Suite(.systemTest, .serialized)
struct ActionsCameraTests {
    static let logger = Logger(label: "evcapture.tests.actions")

    let node: String

    init() throws {
        node = try #require(vividNode(), "no vivid-000-vid-cap in /sys/class/video4linux (the guest loads vivid)")
    }

    func settings(
        _ directory: ScratchDirectory, frameTimeout: Duration = .seconds(5), preRoll: Duration = .zero, videoFormat: VideoFormat = .mp4
    ) -> CaptureSettings {
        CaptureSettings(
            devicePath: node, outputDirectory: directory.url.path, width: 320, height: 240,
            frameTimeout: frameTimeout, preRoll: preRoll, videoFormat: videoFormat)
    }

    func source(_ s: CaptureSettings) -> FrameSource { FrameSource(settings: s.stream, logger: Self.logger) }

    static func now() -> Int64 { monotonicNow().microseconds }

    /// ffprobe's view of a file's video stream: frames counted by decoding every one, frame
    /// rate, codec. The harness installs ffmpeg (Tests/System/run).
    func probe(_ path: String) throws -> (frames: Int, rate: String, codec: String) {
        let result = try run(
            "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
            "stream=codec_name,nb_read_frames,r_frame_rate", "-of", "default=noprint_wrappers=1", path)
        guard result.succeeded else { throw ProcessError(argv: ["ffprobe", path], problem: "\(result)") }
        var fields: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return (Int(fields["nb_read_frames"] ?? "") ?? -1, fields["r_frame_rate"] ?? "", fields["codec_name"] ?? "")
    }

    @Test func streamNegotiatesAndDeliversFrames() throws {
        let stream = try VideoCaptureStream(path: node, width: 320, height: 240)
        #expect(stream.format.pixelFormat == .yuyv || stream.format.pixelFormat.isJPEG, "\(stream.format)")
        // vivid's webcam input has fixed sizes: 320 wide is 320×180 there; the driver decides.
        #expect(stream.format.width == 320 && stream.format.height > 0, "\(stream.format)")
        let a = try stream.nextFrame(timeout: .seconds(5))
        let b = try stream.nextFrame(timeout: .seconds(5))
        #expect(b.sequence > a.sequence)
        #expect(a.bytes.count >= stream.format.bytesPerLine * stream.format.height || stream.format.pixelFormat.isJPEG)
        stream.stop()
    }

    @Test func photoFromVividIsAJPEGThatDecodesWithItsCaptureTime() throws {
        let scratch = try ScratchDirectory(prefix: "photo")
        let frames = source(settings(scratch))
        defer { frames.stopAndWait() }
        let ring = try frames.frame(nearest: monotonicNow(), timeout: .seconds(10))
        #expect(ring.timestampKind.isMonotonic, "\(ring.timestampKind)")
        let photo = try Photo.save(ring, settings(scratch), CaptureRequest(press: 7, action: .primary, time: 1_763_769_599.5))
        #expect(photo.frameTime == ring.time && photo.sequence == ring.frame.sequence)
        #expect(photo.path.hasPrefix(scratch.url.path + "/evcapture-") && photo.path.hasSuffix("-press7.jpg"), "\(photo.path)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: photo.path)))
        let info = try JPEG.decode(bytes)
        #expect(info.width == 320 && info.height == photo.height && info.warnings == 0, "\(info)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).count == 1, "no temporary file left")
        // EXIF: the frame's moment in local time, with its microseconds.
        let exif = try #require(JPEG.captureTime(of: bytes), "no DateTimeOriginal")
        let (date, sub) = JPEG.exifTime(ring.time.wallSeconds)
        #expect(exif.subsec.count == 6 && exif.dateTime.count == 19, "\(exif)")
        // Computed again now: the same moment, give or take the two clocks' reads (or across a second).
        let diff = abs((Int(exif.subsec) ?? -10_000_000) - (Int(sub) ?? 0))
        #expect((exif.dateTime == date && diff < 5_000) || diff > 995_000, "\(exif) vs \(date).\(sub)")
    }

    /// Zero shutter lag: with the ring running, a photo for a moment in the past is the frame
    /// nearest that moment, checked against the ring's frames read independently.
    @Test func thePhotoIsTheFrameNearestThePress() throws {
        let scratch = try ScratchDirectory(prefix: "zsl")
        let frames = source(settings(scratch))
        frames.start()
        defer { frames.stopAndWait() }
        _ = try frames.frame(nearest: monotonicNow(), timeout: .seconds(10))  // the ring runs
        Thread.sleep(forTimeInterval: 1.0)
        for back in [700_000, 450_000, 200_000] as [Int64] {
            let press = Self.now() - back
            let chosen = try frames.frame(nearest: Timestamp(microseconds: press), timeout: .seconds(5))
            // Every frame from 300 ms before the press to 300 ms after it, from the ring.
            var around: [RingFrame] = []
            _ = try frames.frames(from: Timestamp(microseconds: press - 300_000), timeout: .seconds(5)) { f in
                around.append(f)
                return f.time.microseconds < press + 300_000
            }
            let nearest = try #require(around.min { abs($0.time.microseconds - press) < abs($1.time.microseconds - press) })
            #expect(
                chosen.frame.sequence == nearest.frame.sequence,
                "chose \(chosen.time.microseconds), nearest \(nearest.time.microseconds) to \(press)")
            let before = around.last { $0.time.microseconds <= press }, after = around.first { $0.time.microseconds >= press }
            if let before, let after {
                #expect(
                    abs(chosen.time.microseconds - press) * 2 <= after.time.microseconds - before.time.microseconds,
                    "more than half a frame interval off")
            }
            #expect(around.first!.time.microseconds <= press, "the ring does not reach back \(back) µs")
        }
    }

    /// A cold stream's photo is a frame from after the request; `on-press` stops after its
    /// idle time: the camera is not left streaming.
    @Test func onPressLetsTheCameraGo() throws {
        let scratch = try ScratchDirectory(prefix: "modes")
        let prepared = FrameSource(settings: settings(scratch).stream, mode: .onPress, idleStop: .seconds(1), logger: Self.logger)
        defer { prepared.stopAndWait() }
        let asked = monotonicNow()
        let photo = try prepared.frame(nearest: asked, timeout: .seconds(10))
        #expect(photo.time > asked, "a cold stream's frame is from after the request")
        #expect(prepared.isRunning)
        #expect(pollUntil(timeout: .seconds(6)) { !prepared.isRunning }, "on-press did not stop after its idle time")
    }

    /// A recording from a time before it was asked for (pre-roll) starts with the ring's
    /// frame nearest that time.
    @Test func aRecordingFromThePressIncludesThePreRoll() async throws {
        let scratch = try ScratchDirectory(prefix: "preroll")
        let frames = source(settings(scratch))
        frames.start()
        defer { frames.stopAndWait() }
        _ = try frames.frame(nearest: monotonicNow(), timeout: .seconds(10))
        try await Task.sleep(for: .seconds(1))
        let asked = Self.now()
        let from = asked - 600_000
        let recording = try await VideoRecording.start(
            from: frames, time: Timestamp(microseconds: from), settings(scratch), CaptureRequest(press: 4, action: .primary, time: 0),
            logger: Self.logger)
        try await Task.sleep(for: .milliseconds(500))
        let video = try await recording.stop().get()
        let first = try #require(video.frameTime).microseconds
        // The frame nearest `from` (as a photo of that moment): at most half a frame
        // interval away (vivid under emulation: 5 fps or more).
        #expect(
            abs(first - from) <= 100_000 && first < asked - 300_000,
            "first frame \(first - asked) µs from the request, wanted from \(from - asked)")
        #expect(try probe(video.path).frames == video.frames)
    }

    @Test func aBusyCameraIsATypedErrorNotAHang() throws {
        let scratch = try ScratchDirectory(prefix: "busy")
        let holder = try VideoCaptureStream(path: node, width: 320, height: 240)
        try holder.start()
        defer { holder.stop() }
        let start = ContinuousClock.now
        let error = try #require(throws: RecordingError.self) {
            do throws(StreamingError) {
                _ = try source(settings(scratch, frameTimeout: .seconds(30))).frame(nearest: monotonicNow(), timeout: .seconds(30))
            } catch { throw RecordingError.camera(error) }
        }
        let took = ContinuousClock.now - start
        #expect(error.code == "camera-busy", "\(error)")
        // Waiting for a frame would last the whole 30 s frame timeout; refused, it is quick.
        #expect(took < .seconds(15), "took \(took)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty)
    }

    @Test func aTwoSecondRecordingIsAnAVIWithAPlausibleFrameCount() async throws {
        let scratch = try ScratchDirectory(prefix: "video")
        let frames = source(settings(scratch, videoFormat: .avi))
        defer { frames.stopAndWait() }
        let recording = try await VideoRecording.start(
            from: frames, time: monotonicNow(), settings(scratch, videoFormat: .avi), CaptureRequest(press: 3, action: .primary, time: 0),
            logger: Self.logger)
        try await Task.sleep(for: .seconds(2))
        let video = try await recording.stop().get()
        print("recorded \(video.frames) frames \(video.width)x\(video.height) at \(video.framesPerSecond) fps: \(video.path)")
        // vivid runs at 30 fps nominally; under emulation it may deliver fewer.
        #expect(video.frames >= 10 && video.frames <= 75, "\(video.frames) frames at \(video.framesPerSecond) fps")
        #expect(video.framesPerSecond > 4 && video.framesPerSecond <= 61)
        let duration = Double(video.frames) / video.framesPerSecond
        #expect(duration > 1.2 && duration < 3.5, "plays for \(duration) s")
        let p = try probe(video.path)
        print("ffprobe: \(p)")
        #expect(p.codec == "mjpeg")
        #expect(p.frames == video.frames, "ffprobe counted \(p.frames), the writer \(video.frames)")
        let parts = p.rate.split(separator: "/").compactMap { Double($0) }
        #expect(parts.count == 2 && abs(parts[0] / parts[1] - video.framesPerSecond) < 0.01, "rate \(p.rate)")
        withExtendedLifetime(scratch) {}  // the directory stays until the checks are done
    }

    @Test func runnerRecordsOnLongPressAndTakesAPhotoFromTheRecording() async throws {
        let scratch = try ScratchDirectory(prefix: "runner")
        let saved = Mutex<[String]>([])
        let failures = Mutex<[ActionError]>([])
        let hookLog = "\(scratch.url.path)/hook.log"
        let hook = ExecHook(
            argv: ["/bin/sh", "-c", "echo \"$EVCAPTURE_EVENT $EVCAPTURE_FILE $EVCAPTURE_FRAME_TIME\" >> \"$0\"", hookLog],
            on: [.photo, .video])
        let capture = settings(scratch)
        let runner = ActionRunner(
            configuration: ActionsConfiguration(capture: capture, hooks: [hook], sound: .off),
            frames: capture.captureStream(
                logger: Self.logger, onError: { e in failures.withLock { $0.append(.recording(.camera(e))) } }),
            logger: Self.logger,
            onOutcome: { outcome in
                switch outcome {
                case .photoSaved(let p, _): saved.withLock { $0.append(p.path) }
                case .videoSaved(let v, _): saved.withLock { $0.append(v.path) }
                case .failed(let e, _): failures.withLock { $0.append(e) }
                default: break
                }
            })
        func t(_ kind: ActionTrigger.Kind, _ press: PressID, _ action: CaptureAction = .primary) -> ActionTrigger {
            ActionTrigger(
                kind: kind, action: action, button: "KEY_VOLUMEDOWN", deviceName: "gpio-keys", deviceNode: "/dev/input/event0",
                press: press, time: monotonicNow())
        }
        runner.handle(t(.began, 1))
        runner.handle(t(.longPress, 1))
        try await Task.sleep(for: .seconds(1))
        runner.handle(t(.began, 2, .secondary))
        runner.handle(t(.click, 2, .secondary))  // photo while recording
        runner.handle(t(.ended, 2, .secondary))
        try await Task.sleep(for: .seconds(1))
        runner.handle(t(.ended, 1))
        await runner.shutdown()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let files = saved.withLock { $0 }
        #expect(files.count == 2)
        #expect(files.contains { $0.hasSuffix("-press2.jpg") } && files.contains { $0.hasSuffix("-press1.mp4") }, "\(files)")
        if let jpg = files.first(where: { $0.hasSuffix(".jpg") }) {
            #expect(try JPEG.decode([UInt8](Data(contentsOf: URL(fileURLWithPath: jpg)))).width == 320)
        }
        let hookLines = try String(contentsOfFile: hookLog, encoding: .utf8).split(separator: "\n").sorted()
        #expect(
            hookLines.count == 2 && hookLines[0].hasPrefix("photo \(scratch.url.path)/")
                && hookLines[1].hasPrefix("video \(scratch.url.path)/"), "\(hookLines)")
        // Each hook got its file's frame time (seconds on the capture events' clock).
        #expect(hookLines.allSatisfy { ($0.split(separator: " ").last.flatMap { Double($0) } ?? 0) > 0 }, "\(hookLines)")
    }

    @Test func rapidClicksEachGetTheirOwnPhoto() async throws {
        let scratch = try ScratchDirectory(prefix: "burst")
        let saved = Mutex<[String]>([])
        let capture = settings(scratch)
        let runner = ActionRunner(
            configuration: ActionsConfiguration(capture: capture, sound: .off), frames: capture.captureStream(logger: Self.logger),
            logger: Self.logger,
            onOutcome: { if case .photoSaved(let p, _) = $0 { saved.withLock { $0.append(p.path) } } })
        for press in UInt64(10)...12 {
            runner.handle(
                ActionTrigger(
                    kind: .click, action: .primary, button: "KEY_CAMERA", deviceName: "cam", deviceNode: "/dev/input/event1",
                    press: PressID(rawValue: press),
                    time: monotonicNow()))
        }
        // Queued, not taken on the caller's time: taking them would have saved all three by now.
        let savedRightAway = saved.withLock { $0.count }
        #expect(savedRightAway < 3, "handle() took the photos itself")
        await runner.shutdown()
        let files = saved.withLock { $0 }.sorted()
        #expect(files.count == 3 && Set(files).count == 3, "\(files)")
        #expect(files.map { ($0 as NSString).lastPathComponent.suffix(11) } == ["press10.jpg", "press11.jpg", "press12.jpg"])
        for f in files { #expect(try JPEG.decode([UInt8](Data(contentsOf: URL(fileURLWithPath: f)))).warnings == 0) }
        withExtendedLifetime(scratch) {}  // the directory stays until the checks are done
    }
}
