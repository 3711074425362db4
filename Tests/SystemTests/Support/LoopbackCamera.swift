import Foundation

#if canImport(Glibc)
import Glibc
import EvcaptureTesting
#endif

/// A camera that sends compressed frames as a real driver delivers them: v4l2loopback (the
/// module the harness built, `EVCAPTURE_V4L2LOOPBACK_MODULE`) loaded with `exclusive_caps=1`,
/// which makes its node a capture device once a writer streams into it, and the ffmpeg CLI
/// writing a clip into it at 30 frames a second, over and over, one frame per buffer, with the
/// pixel format set on the output side (`V4L2_PIX_FMT_H264` or `V4L2_PIX_FMT_MJPEG`):
/// - ``Feed/h264``: a clip encoded once with libx264 (an IDR frame every `gop` frames, no
///   B-frames); what the camera sends is exactly its access units, so a file that holds the
///   camera's H.264 as it is decodes to the clip's pictures;
/// - ``Feed/mjpeg``: JPEG files made once by ffmpeg's encoder, each sent as it is
///   (``jpegFrames``): a frame the daemon got from the camera is one of them, byte for byte.
/// ``stop()`` ends the writer and unloads the module.
final class LoopbackCamera {
    enum Feed: String {
        case h264 = "H264"
        case mjpeg = "MJPG"
    }

    /// The node v4l2loopback makes (`video_nr`), far above vivid's and uvcvideo's.
    static let node = "/dev/video60"
    static let gop = 15
    static let framesPerSecond = 30
    let feed: Feed
    /// H.264: the clip, in MPEG-TS (Annex B access units, parameter sets before each IDR
    /// frame; a container the writer can seek back to its start in, as a bare stream cannot).
    /// MJPEG: the first of the JPEG files (`%03d.jpg` in the same directory).
    let clip: String
    /// MJPEG: the JPEG files' bytes, in the order they are sent (empty for H.264).
    let jpegFrames: [[UInt8]]
    private let writer: TestChild
    private let scratch: ScratchDirectory
    private let writerLog: URL

    /// What the writer said (its errors).
    var log: String { (try? String(contentsOf: writerLog, encoding: .utf8)) ?? "" }

    static var modulePath: String? {
        ProcessInfo.processInfo.environment["EVCAPTURE_V4L2LOOPBACK_MODULE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Encodes the clip (`seconds` long, `width`×`height`), loads the module and starts the
    /// writer; returns once the node offers the feed's format for capture (≤ 30 s).
    init(_ feed: Feed = .h264, seconds: Int = 4, width: Int = 640, height: Int = 480) throws {
        guard let module = Self.modulePath else {
            throw Failure(description: "no v4l2loopback module: the harness did not build it (see its warning)")
        }
        self.feed = feed
        scratch = try ScratchDirectory(prefix: "loopbackcamera")
        let dir = scratch.url
        let source = [
            "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=\(Self.framesPerSecond)", "-t",
            "\(seconds)",
        ]
        let input: [String]
        switch feed {
        case .h264:
            clip = scratch.url.appendingPathComponent("clip.ts").path
            let encoded = try run(
                source + [
                    "-c:v", "libx264", "-preset", "ultrafast", "-g", "\(Self.gop)", "-bf", "0", "-pix_fmt", "yuv420p", "-f", "mpegts", clip,
                ],
                timeout: .seconds(120))
            guard encoded.succeeded else { throw Failure(description: "encoding the clip: \(encoded)") }
            jpegFrames = []
            input = ["-stream_loop", "-1", "-i", clip]
        case .mjpeg:
            let pattern = scratch.url.appendingPathComponent("%03d.jpg").path
            let encoded = try run(source + ["-c:v", "mjpeg", "-q:v", "4", "-pix_fmt", "yuvj422p", pattern], timeout: .seconds(120))
            guard encoded.succeeded else { throw Failure(description: "encoding the frames: \(encoded)") }
            clip = scratch.url.appendingPathComponent("001.jpg").path
            jpegFrames = try (1...(seconds * Self.framesPerSecond)).map { n in
                let name = n < 10 ? "00\(n)" : n < 100 ? "0\(n)" : "\(n)"
                return [UInt8](try Data(contentsOf: dir.appendingPathComponent("\(name).jpg")))
            }
            // The image2 demuxer reads each file as one packet; `-c copy` writes it as it is.
            input = ["-loop", "1", "-framerate", "\(Self.framesPerSecond)", "-i", pattern]
        }
        _ = try? run("rmmod", "v4l2loopback")
        // 32 buffers (its most) rather than its default 2.
        let loaded = try run("insmod", module, "exclusive_caps=1", "max_buffers=32", "video_nr=60", "card_label=evcapture-loopback")
        guard loaded.succeeded else {
            let holders = (try? run("fuser", "-v", Self.node))?.description ?? ""
            throw Failure(description: "insmod \(module): \(loaded)\nwho holds \(Self.node): \(holders)")
        }
        writerLog = scratch.url.appendingPathComponent("writer.log")
        writer = try TestChild(["ffmpeg", "-v", "error", "-re"] + input + ["-c", "copy", "-f", "v4l2", Self.node], log: writerLog.path)
        var formats = ""
        let offered = pollUntil(timeout: .seconds(30)) {
            formats = (try? run("v4l2-ctl", "-d", Self.node, "--list-formats"))?.stdout ?? ""
            return formats.contains("Video Capture") && formats.contains("'\(feed.rawValue)'")
        }
        guard offered else {
            stop()
            throw Failure(description: "\(Self.node) offers no \(feed) for capture after 30 s: \(formats)\n\(log)")
        }
    }

    /// Ends the writer and unloads the module (once nothing holds the node); says what was
    /// in the way when it could not.
    @discardableResult
    func stop() -> String? {
        writer.terminate(timeout: .seconds(5))
        var last: ProgramResult?
        let unloaded = pollUntil(timeout: .seconds(20)) {
            last = try? run("rmmod", "v4l2loopback")
            return last?.succeeded ?? false
        }
        guard !unloaded else { return nil }
        let holders = (try? run("fuser", "-v", Self.node))?.description ?? ""
        return "rmmod v4l2loopback: \(last?.description ?? "did not run")\nwho holds \(Self.node): \(holders)"
    }

    /// The MD5 of each decoded picture of a video file or stream, in order (ffmpeg's framemd5).
    static func pictureDigests(_ path: String) throws -> [String] {
        let r = try run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-f", "framemd5", "-"], timeout: .seconds(120))
        guard r.succeeded else { throw Failure(description: "framemd5 of \(path): \(r)") }
        return r.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }
}
