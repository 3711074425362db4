#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing

/// A camera that sends MJPEG, behind a real driver: v4l2loopback fed JPEG files by the
/// ffmpeg CLI (``LoopbackCamera/Feed/mjpeg``), the daemon on it with its default formats. What
/// the camera sent is passed on, never encoded again (docs/video.md#camera-formats,
/// docs/live-view.md#frames): a photo is one of the camera's frames with only the EXIF
/// segment put in after its start-of-image marker, and every part of the MJPEG stream and
/// the snapshot is one of its frames, byte for byte.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct MJPEGCameraSystemTests {
    /// The JPEG without the APP1 (EXIF) segment right after its start-of-image marker, or nil
    /// when there is none there.
    static func withoutLeadingExif(_ jpeg: [UInt8]) -> [UInt8]? {
        guard jpeg.count > 6, jpeg[0] == 0xFF, jpeg[1] == 0xD8, jpeg[2] == 0xFF, jpeg[3] == 0xE1 else { return nil }
        let end = 4 + (Int(jpeg[4]) << 8 | Int(jpeg[5]))
        guard end <= jpeg.count else { return nil }
        return [0xFF, 0xD8] + jpeg[end...]
    }

    @Test(.timeLimit(.minutes(3)), .enabled(if: LiveViewClient.curl != nil, "needs curl"))
    func photosAndTheLiveViewAreTheCamerasOwnJPEGs() throws {
        let started = Date()
        func phase(_ what: String) { print("mjpeg camera: \(what) at \(Date().timeIntervalSince(started)) s") }
        let camera = try LoopbackCamera(.mjpeg, seconds: 1, width: 320, height: 240)
        phase("streaming")
        var stopped = false
        defer { if !stopped { camera.stop() } }
        let sent = Set(camera.jpegFrames)
        #expect(sent.count == camera.jpegFrames.count && sent.count == LoopbackCamera.framesPerSecond, "frames alike")

        let port = try MosquittoBroker.freePort()
        let scratch = try DaemonScratch("mjpeg-camera")
        // The default pixel formats (MJPEG first) and quality: a frame encoded again would be
        // none of the camera's.
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"
            capture-device = "\(LoopbackCamera.node)"

            [output]
            directory = "\(scratch.output)"

            [http]
            listen = "127.0.0.1:\(port)"
            """)
        let daemon = try DaemonProcess("mjpeg-camera", arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.session("started")) != nil, "\(daemon.transcript)\ncamera: \(camera.log)")
        let base = "http://127.0.0.1:\(port)"
        try #require(pollUntil(timeout: .seconds(20)) { daemon.stderr.contains("\(base)/") }, "\(daemon.transcript)")

        phase("daemon started")
        // The live view: 2 s of the stream, and the snapshot.
        let stream = scratch.path + "/stream.mjpg"
        try LiveViewClient.request(["--max-time", "2", "\(base)/stream.mjpg"], output: stream)
        let parts = LiveViewClient.parts([UInt8](try Data(contentsOf: URL(fileURLWithPath: stream))))
        #expect(parts.count >= 5, "\(parts.count) parts in 2 s\n\(daemon.transcript)")
        let foreign = parts.indices.filter { !sent.contains(parts[$0].body) }
        #expect(foreign.isEmpty, "parts \(foreign) of \(parts.count) are none of the camera's frames")
        // Not one frame over and over: the stream follows the camera.
        #expect(Set(parts.map(\.body)).count >= 3, "\(Set(parts.map(\.body)).count) distinct frames in \(parts.count) parts")
        let snapshot = scratch.path + "/snapshot.jpg"
        #expect(try LiveViewClient.request(["\(base)/snapshot.jpg"], output: snapshot).status == 200)
        let snapshotIsSent = sent.contains([UInt8](try Data(contentsOf: URL(fileURLWithPath: snapshot))))
        #expect(snapshotIsSent, "the snapshot is none of the camera's frames")

        phase("live view read")
        // A photo from the page: the camera's frame with its EXIF time, nothing else changed.
        let from = daemon.objects.count
        let (posted, pr) = try LiveViewClient.request(["-X", "POST", "-H", "Origin: \(base)", "\(base)/api/capture"])
        #expect(posted == 202, "\(pr)")
        let photo = try #require(
            daemon.waitFor(timeout: .seconds(30), from: from) { $0.event == "action" && $0.string("action") == "photo" },
            "\(daemon.transcript)")
        let file = try #require(photo.object.string("file"))
        let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        let frame = try #require(Self.withoutLeadingExif(written), "no EXIF segment after the start-of-image marker")
        let photoIsSent = sent.contains(frame)
        #expect(photoIsSent, "the photo (\(written.count) bytes) is none of the camera's frames with EXIF put in")

        phase("photo taken")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        stopped = true
        let problem = camera.stop()
        #expect(problem == nil, "\(problem ?? "")")
        phase("stopped")
    }
}
