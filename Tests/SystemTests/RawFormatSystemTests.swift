import EvcaptureTesting
import Foundation
import Logging
import Synchronization
import Testing
import V4L2
import Vocabulary

import Actions
import Recording

/// Cameras that send only uncompressed RGB or 4:2:0 frames: vivid, asked for one format at a
/// time, through the action runner's click (photo) and long press (MP4). The photo must show
/// vivid's colour bars as the same camera's YUYV photo does; ffprobe decodes the MP4.
@Suite(.systemTest, .serialized)
struct RawFormatSystemTests {
    static let logger = Logger(label: "evcapture.tests.raw-formats")

    let node: String

    init() throws {
        node = try #require(vividNode(), "no vivid-000-vid-cap in /sys/class/video4linux (the guest loads vivid)")
    }

    func settings(_ directory: ScratchDirectory, _ formats: [PixelFormat]) -> CaptureSettings {
        var s = CaptureSettings(devicePath: node, outputDirectory: directory.url.path, width: 320, height: 240)
        s.pixelFormats = formats
        return s
    }

    /// The photo's colours along a row in the lower part (vivid's bars, below its text),
    /// one sample in the middle of each eighth of the width.
    static func bars(_ jpeg: [UInt8]) throws -> [[Int]] {
        let image = try JPEG.rgb(jpeg)
        let y = image.height * 3 / 4
        return (0..<8).map { bar in
            let x = image.width * (2 * bar + 1) / 16
            let i = (y * image.width + x) * 3
            return [Int(image.pixels[i]), Int(image.pixels[i + 1]), Int(image.pixels[i + 2])]
        }
    }

    /// A click's photo and a long press's video through the runner, with the given formats.
    func clickAndHold(_ formats: [PixelFormat]) async throws -> (
        photo: String, video: String?, videoFrames: Int, failures: [ActionError]
    ) {
        let scratch = try ScratchDirectory(prefix: "raw")
        let saved = Mutex<[String]>([])
        let videoFrames = Mutex(0)
        let failures = Mutex<[ActionError]>([])
        let capture = settings(scratch, formats)
        let runner = ActionRunner(
            configuration: ActionsConfiguration(capture: capture, sound: .off),
            frames: capture.captureStream(
                logger: Self.logger, onError: { e in failures.withLock { $0.append(.recording(.camera(e))) } }),
            logger: Self.logger,
            onOutcome: { outcome in
                switch outcome {
                case .photoSaved(let p, _): saved.withLock { $0.append(p.path) }
                case .videoSaved(let v, _):
                    saved.withLock { $0.append(v.path) }
                    videoFrames.withLock { $0 = v.frames }
                case .failed(let e, _): failures.withLock { $0.append(e) }
                default: break
                }
            })
        func t(_ kind: ActionTrigger.Kind, _ press: UInt64) -> ActionTrigger {
            ActionTrigger(
                kind: kind, action: .primary, button: "KEY_CAMERA", deviceName: "cam", deviceNode: "/dev/input/event0",
                press: PressID(rawValue: press), time: monotonicNow())
        }
        runner.handle(t(.began, 1))
        runner.handle(t(.click, 1))
        runner.handle(t(.ended, 1))
        try await Task.sleep(for: .seconds(1))
        runner.handle(t(.began, 2))
        runner.handle(t(.longPress, 2))
        try await Task.sleep(for: .seconds(2))
        runner.handle(t(.ended, 2))
        await runner.shutdown()
        let files = saved.withLock { $0 }
        // Copied out: the scratch directory goes with this function.
        let photo = try #require(files.first { $0.hasSuffix("-press1.jpg") }, "no photo in \(files), \(failures.withLock { $0 })")
        let keep = NSTemporaryDirectory() + "raw-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: photo, toPath: keep + "/photo.jpg")
        var video: String?
        if let v = files.first(where: { $0.hasSuffix("-press2.mp4") }) {
            try FileManager.default.copyItem(atPath: v, toPath: keep + "/video.mp4")
            video = keep + "/video.mp4"
        }
        withExtendedLifetime(scratch) {}
        return (keep + "/photo.jpg", video, videoFrames.withLock { $0 }, failures.withLock { $0 })
    }

    /// What the stream settles on; the camera is closed again on return.
    func negotiated(_ formats: [PixelFormat]) throws -> StreamFormat {
        try VideoCaptureStream(path: node, width: 320, height: 240, pixelFormats: formats).format
    }

    @Test func theStreamTakesAnUncompressedFormatOnlyWhenAskedOrWhenNothingElseIsOffered() throws {
        // vivid offers YUYV: the default order keeps it.
        let usual = try negotiated(PixelFormat.captureOrder)
        #expect(usual.pixelFormat == .yuyv, "\(usual)")
        let error = #expect(throws: StreamingError.self) {
            _ = try VideoCaptureStream(path: node, width: 320, height: 240, pixelFormats: [.mjpeg, .jpeg])
        }
        #expect(
            error?.code == .noUsableFormat && error?.context.contains("one of [MJPG, JPEG] needed") == true, "\(String(describing: error))")
    }

    @Test(arguments: [PixelFormat.rgb24, .bgr24, .yuv420, .nv12])
    func aPhotoAndAVideoFromAnUncompressedFormat(_ format: PixelFormat) async throws {
        let geometry = try negotiated([format])
        #expect(geometry.pixelFormat == format && geometry.width == 320, "\(geometry)")

        let reference = try await clickAndHold([.yuyv])
        let taken = try await clickAndHold([format])
        #expect(taken.failures.isEmpty && reference.failures.isEmpty, "\(taken.failures) \(reference.failures)")

        let jpeg = [UInt8](try Data(contentsOf: URL(fileURLWithPath: taken.photo)))
        let info = try JPEG.decode(jpeg)
        #expect(info.width == geometry.width && info.height == geometry.height && info.warnings == 0, "\(info)")
        #expect(JPEG.captureTime(of: jpeg) != nil, "\(format): no EXIF DateTimeOriginal")
        let bars = try Self.bars(jpeg)
        var want = try Self.bars([UInt8](Data(contentsOf: URL(fileURLWithPath: reference.photo))))
        if format == .rgb24 || format == .bgr24 {
            // vivid's YUV is studio swing (16-235), which a JPEG keeps as its samples: its
            // photo's black is 16 and its white 235 where the RGB photo has 0 and 255.
            want = want.map { $0.map { max(0, min(255, ($0 - 16) * 255 / 219)) } }
        }
        // The same bars as the YUYV photo (the encoders round differently)...
        for (got, expected) in zip(bars, want) {
            #expect(zip(got, expected).allSatisfy { abs($0 - $1) <= 24 }, "\(format): bars \(bars), YUYV \(want)")
        }
        // ...and bars they are: colours far apart (a swapped R and B would show above too).
        let spread = (0..<3).map { c in (bars.map { $0[c] }.max() ?? 0) - (bars.map { $0[c] }.min() ?? 0) }
        #expect(spread.allSatisfy { $0 > 100 }, "\(format): bars \(bars)")

        let video = try #require(taken.video, "\(format): no video")
        let probe = try run(
            "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
            "stream=codec_name,nb_read_frames,width,height", "-of", "default=noprint_wrappers=1", video)
        #expect(probe.succeeded, "\(probe)")
        #expect(probe.stdout.contains("codec_name=h264") && probe.stdout.contains("width=\(geometry.width)"), "\(probe.stdout)")
        let frames =
            probe.stdout.split(separator: "\n").first { $0.hasPrefix("nb_read_frames=") }
            .flatMap { Int($0.dropFirst("nb_read_frames=".count)) } ?? 0
        // Every frame the writer wrote decodes; two seconds' worth (vivid runs slowly in the VM).
        #expect(frames == taken.videoFrames && frames >= 5, "\(format): wrote \(taken.videoFrames), \(probe.stdout)")
    }
}
