#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Evdev
import Foundation
import Media
import Testing

/// A camera's own H.264 in the MP4 without re-encoding ([camera] pixel-format = "h264",
/// docs/video.md#the-cameras-own-h264), from a real V4L2 device: v4l2loopback fed by the
/// ffmpeg CLI (``H264Camera``). Read back with ffprobe and ffmpeg's decoder.
@Suite(.systemTest, .serialized)
struct VideoH264CameraSystemTests {
    static let port = 18097

    static func config(output: String, preRoll: Double) -> String {
        """
        [camera]
        device = "none"
        capture-device = "\(H264Camera.node)"
        stream = "always"
        pixel-format = "h264"
        pre-roll = \(preRoll)
        [capture]
        hold-threshold = 0.3
        [output]
        directory = "\(output)"
        video-format = "mp4"
        [handlers.primary]
        click = "photo"
        long-press = "video"
        [sound]
        play = "off"
        [http]
        listen = "127.0.0.1:\(port)"
        """
    }

    /// ffprobe's view of each frame: its time (s) and whether it is a keyframe.
    static func frames(_ path: String) throws -> [(time: Double, key: Bool)] {
        let r = try run(
            "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time,key_frame", "-of", "csv=p=0", path)
        return r.stdout.split(separator: "\n").compactMap { line in
            // key_frame,pts_time (ffprobe's order), side data may follow
            let f = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard f.count >= 2, let key = Int(f[0]), let t = Double(f[1]) else { return nil }
            return (t, key == 1)
        }
    }

    /// A 2 s hold with 0.5 s of pre-roll from a camera that sends H.264 with an IDR frame
    /// every 15: an MP4 of the camera's access units as they are (not encoded: the action
    /// line says `camera`, and every picture decodes to the clip's picture it came from),
    /// starting at the last IDR frame at or before the press minus the pre-roll.
    @Test(.timeLimit(.minutes(4))) func aLongPressMuxesTheCamerasH264FromTheKeyframeBeforeThePress() throws {
        let camera = try H264Camera()
        defer { camera.stop() }
        let formats = try run("v4l2-ctl", "-d", H264Camera.node, "--list-formats-ext")
        #expect(formats.stdout.contains("'H264'") && formats.stdout.contains("640x480"), "\(formats)")

        let output = try ScratchDirectory(prefix: "h264cam")
        let preRoll = 0.5
        let daemon = try ReliabilityDaemon(config: Self.config(output: output.url.path, preRoll: preRoll))
        let keys = try VideoMP4SystemTests.keys("evcapture h264 shutter")
        defer { keys.destroy() }
        #expect(daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == keys.node } }, "\(daemon)")
        usleep(2_000_000)  // the ring fills past the pre-roll and a GOP

        try ReliabilityInputTests.press(keys, .volumeDown, 1)
        usleep(2_000_000)
        try ReliabilityInputTests.press(keys, .volumeDown, 0)
        #expect(
            daemon.waitFor(timeout: .seconds(60)) { $0.contains { $0["action"] as? String == "video" } },
            "no video\n\(daemon)\ncamera: \(camera.log)")
        let video = try #require(daemon.objects(event: "action").first { $0["action"] as? String == "video" }, "\(daemon)")
        let began = try #require(daemon.captures("began").first?["time"] as? Double)
        let path = try #require(video["file"] as? String)
        let frames = try #require(video["frames"] as? Int)
        let firstFrame = try #require(video["frame_time"] as? Double)
        #expect(path.hasSuffix(".mp4") && video["format"] as? String == "mp4", "\(video)")
        // Not encoded: no encoder was used.
        #expect(video["encoder"] as? String == "camera", "\(video)")
        let skipped = try #require(video["skipped"] as? Int, "\(video)")

        let p = try VideoMP4SystemTests.probe(path)
        #expect(p.codec == "h264", "\(p)")
        #expect(p.frames == frames && p.times.count == frames, "ffprobe: \(p.frames) frames, \(p.times.count) times; daemon: \(frames)")
        #expect(p.stderr.isEmpty, "\(p.stderr)")
        let list = try Self.frames(path)
        #expect(list.count == frames)
        // The first frame is an IDR frame, the last at or before the press minus the
        // pre-roll: the next keyframe of the file comes after that moment.
        let target = began - preRoll
        #expect(list.first?.key == true, "\(list.prefix(3))")
        #expect(firstFrame <= target + 0.001, "first frame \(firstFrame), press − pre-roll \(target)")
        let nextKey = try #require(list.dropFirst().first { $0.key }, "no second keyframe in \(frames) frames")
        let nextKeyTime = firstFrame + nextKey.time - list[0].time
        #expect(nextKeyTime > target - 0.001, "next keyframe at \(nextKeyTime), press − pre-roll \(target)")
        let keyGaps = zip(list.filter(\.key), list.filter(\.key).dropFirst()).map { $1.time - $0.time }
        print(
            "h264 camera: \(frames) frames, first frame \(firstFrame - target) s from press − pre-roll, next keyframe \(nextKeyTime - target) s, keyframe gaps \(keyGaps)"
        )
        // The camera's pictures, bit for bit: each decoded picture of the file is the clip's
        // (looped) that follows the one before it; a recording that fell behind goes on from
        // an IDR frame, and the pictures it jumped over are the ones it counted as skipped.
        let clip = try H264Camera.pictureDigests(camera.clip)
        let recorded = try H264Camera.pictureDigests(path)
        #expect(recorded.count == frames && clip.count == 4 * H264Camera.framesPerSecond)
        let positions = recorded.map { clip.firstIndex(of: $0) }
        #expect(
            !positions.contains(nil), "pictures \(positions.indices.filter { positions[$0] == nil }) are none of the clip's: encoded again")
        if !positions.contains(nil), !positions.isEmpty {
            let at = positions.map { $0! }
            #expect(at[0] % H264Camera.gop == 0, "starts at clip picture \(at[0]), not an IDR frame")
            var jumped = 0
            for i in 1..<at.count where at[i] != (at[i - 1] + 1) % clip.count {
                #expect(at[i] % H264Camera.gop == 0, "picture \(i) (clip \(at[i])) follows clip \(at[i - 1]) and is no IDR frame")
                jumped += (at[i] - at[i - 1] - 1 + clip.count) % clip.count
            }
            #expect(jumped == skipped, "pictures jumped over: \(jumped), skipped: \(skipped)")
        }
        print("h264 camera: \(skipped) skipped")
        // A click's photo from the camera's H.264: the frame nearest the press, decoded from
        // the IDR frame before it, as a 640×480 JPEG.
        try ReliabilityInputTests.press(keys, .volumeDown, 1)
        try ReliabilityInputTests.press(keys, .volumeDown, 0)
        #expect(
            daemon.waitFor(timeout: .seconds(30)) { objects in
                objects.contains { $0["action"] as? String == "photo" || ($0["event"] as? String == "error" && $0["press"] as? Int == 2) }
            }, "\(daemon)")
        let photo = try #require(daemon.objects(event: "action").first { $0["action"] as? String == "photo" }, "\(daemon)")
        let clickBegan = try #require(daemon.captures("began").last?["time"] as? Double)
        let photoTime = try #require(photo["frame_time"] as? Double, "\(photo)")
        #expect(abs(photoTime - clickBegan) < 0.1, "photo frame \(photoTime), press \(clickBegan)")
        let photoPath = try #require(photo["file"] as? String)
        let probed = try run(
            "ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "default=noprint_wrappers=1", photoPath)
        #expect(
            probed.stdout.contains("codec_name=mjpeg") && probed.stdout.contains("width=640") && probed.stdout.contains("height=480"),
            "\(probed)")
        #expect(daemon.objects(event: "error").filter { $0["press"] as? Int == 2 }.isEmpty, "\(daemon)")
        // The live view from the camera's H.264: the snapshot and the stream's frames are
        // pictures (decoded the same way), JPEGs that decode.
        if LiveViewClient.curl != nil {
            let base = "http://127.0.0.1:\(Self.port)"
            let downloads = try ScratchDirectory(prefix: "h264live")
            let snapshot = downloads.url.appendingPathComponent("snapshot.jpg").path
            let (status, r) = try LiveViewClient.request(["\(base)/snapshot.jpg"], output: snapshot)
            #expect(status == 200, "\(r)\n\(daemon)")
            let info = try JPEG.decode(Array(try Data(contentsOf: URL(fileURLWithPath: snapshot))))
            #expect(info.width == 640 && info.height == 480 && info.warnings == 0, "\(info)")
            let stream = downloads.url.appendingPathComponent("stream.mjpg").path
            try LiveViewClient.request(["--max-time", "4", "\(base)/stream.mjpg"], output: stream)
            let parts = LiveViewClient.parts(Array(try Data(contentsOf: URL(fileURLWithPath: stream))))
            #expect(parts.count >= 2, "\(parts.count) parts in 4 s\n\(daemon)")
            for part in parts.prefix(3) {
                let i = try JPEG.decode(part.body)
                #expect(i.width > 0 && i.warnings == 0, "\(i)")
            }
            print("h264 camera: live view \(parts.count) frames in 4 s")
        }
        #expect(daemon.stop() == 0, "\(daemon)")
    }
}
