#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Recording
import Testing
import V4L2

/// A camera's own H.264 in the MP4 without re-encoding ([camera] pixel-format = "h264",
/// docs/video.md#the-cameras-own-h264), from a real V4L2 device: v4l2loopback fed by the
/// ffmpeg CLI (``LoopbackCamera``). Read back with ffprobe and ffmpeg's decoder; the same
/// daemon's RTSP stream is the camera's H.264 too (docs/live-view.md#h264).
@Suite(.systemTest, .serialized)
struct VideoH264CameraSystemTests {
    static let port = 18097
    static let rtspPort = 18554

    static func config(output: String, preRoll: Double) -> String {
        """
        [camera]
        device = "none"
        capture-device = "\(LoopbackCamera.node)"
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
        [rtsp]
        listen = "127.0.0.1:\(rtspPort)"
        """
    }

    /// The NAL units of an Annex B stream, each without its start code and trailing zero bytes.
    static func nalUnits(_ b: [UInt8]) -> [[UInt8]] {
        var starts: [Int] = []
        var i = 0
        while i + 2 < b.count {
            if b[i] == 0, b[i + 1] == 0, b[i + 2] == 1 {
                starts.append(i + 3)
                i += 3
            } else {
                i += 1
            }
        }
        return starts.indices.map { n in
            var end = n + 1 < starts.count ? starts[n + 1] - 3 : b.count
            while end > starts[n], b[end - 1] == 0 { end -= 1 }
            return Array(b[starts[n]..<end])
        }
    }

    /// The camera's H.264 over RTSP as it sent it (docs/live-view.md#h264): what ffprobe sees
    /// through RTSP (profile, level, size) is what it sees in the clip, and the stream's
    /// parameter sets and slices are the clip's, byte for byte — an encode on the way would
    /// make slices of its own.
    static func rtspCarriesTheCamerasH264(_ camera: LoopbackCamera, daemon: ReliabilityDaemon, scratch: String) throws {
        let url = "rtsp://127.0.0.1:\(rtspPort)/live"
        let entries = ["-show_entries", "stream=codec_name,profile,level,width,height,pix_fmt", "-of", "csv=p=0"]
        let sent = try run(["ffprobe", "-v", "error"] + entries + [camera.clip])
        let served = try run(["ffprobe", "-v", "error", "-rtsp_transport", "tcp"] + entries + [url], timeout: .seconds(90))
        #expect(sent.succeeded && served.succeeded, "\(sent)\n\(served)")
        // The first line: a clip in MPEG-TS lists its stream again under its program.
        func first(_ text: String) -> String { text.split(separator: "\n").first.map(String.init) ?? "" }
        #expect(
            first(sent.stdout).hasPrefix("h264,") && first(served.stdout) == first(sent.stdout),
            "clip: \(sent.stdout) RTSP: \(served.stdout)")

        let received = scratch + "/rtsp.h264", clip = scratch + "/clip.h264"
        let copied = try run(
            ["ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", url, "-c", "copy", "-frames:v", "30", "-f", "h264", received],
            timeout: .seconds(120))
        #expect(copied.succeeded, "\(copied)")
        #expect(try run(["ffmpeg", "-v", "error", "-i", camera.clip, "-c", "copy", "-f", "h264", clip]).succeeded)
        let ours = Self.nalUnits([UInt8](try Data(contentsOf: URL(fileURLWithPath: received))))
        let theirs = Self.nalUnits([UInt8](try Data(contentsOf: URL(fileURLWithPath: clip))))
        func of(_ units: [[UInt8]], _ types: Set<UInt8>) -> [[UInt8]] { units.filter { !$0.isEmpty && types.contains($0[0] & 0x1F) } }
        let slices = of(ours, [1, 5]), clipSlices = Set(of(theirs, [1, 5]))
        #expect(
            slices.count >= 25 && clipSlices.count == 4 * LoopbackCamera.framesPerSecond, "\(slices.count) slices, clip \(clipSlices.count)"
        )
        #expect(slices.first.map { $0[0] & 0x1F } == 5, "the stream does not start at an IDR frame")
        let foreign = slices.indices.filter { !clipSlices.contains(slices[$0]) }
        #expect(foreign.isEmpty, "slices \(foreign) of \(slices.count) are none of the clip's")
        let parameterSets = Set(of(ours, [7, 8]))
        #expect(!parameterSets.isEmpty && parameterSets.isSubset(of: Set(of(theirs, [7, 8]))), "SPS/PPS unlike the clip's")
        print("h264 camera: RTSP \(first(served.stdout)), \(slices.count) slices, all the clip's")
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
    /// starting at the last IDR frame at or before the press minus the pre-roll; then a
    /// click's photo, the live view, and RTSP carrying the camera's access units as they are.
    @Test(.timeLimit(.minutes(4))) func aLongPressMuxesTheCamerasH264FromTheKeyframeBeforeThePress() throws {
        let camera = try LoopbackCamera()
        var stopped = false
        defer { if !stopped { camera.stop() } }
        let formats = try run("v4l2-ctl", "-d", LoopbackCamera.node, "--list-formats-ext")
        #expect(formats.stdout.contains("'H264'") && formats.stdout.contains("640x480"), "\(formats)")

        let output = try ScratchDirectory(prefix: "h264cam")
        let preRoll = 0.5
        let daemon = try ReliabilityDaemon(config: Self.config(output: output.url.path, preRoll: preRoll))
        let keys = try VideoMP4SystemTests.keys("evcapture h264 shutter")
        defer { keys.destroy() }
        #expect(daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == keys.node } }, "\(daemon)")
        // GStreamer loads on a thread of its own after start-up, reading every plugin: under
        // emulation it takes the guest's CPU for seconds, which the recording below must not
        // share (its frames would be skipped for as long).
        let started = Date()
        try #require(
            pollUntil(timeout: .seconds(180)) { daemon.stderr.contains("RTSP on rtsp://127.0.0.1:\(Self.rtspPort)/live") }, "\(daemon)")
        print("h264 camera: RTSP listening after \(Date().timeIntervalSince(started)) s")
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
        // The camera dropping frames (v4l2loopback does when its reader is late, as a webcam
        // does) is such a gap too. A file encoded again would have none of the clip's pictures;
        // one that does not decode as the camera's is kept for a look.
        let clip = try LoopbackCamera.pictureDigests(camera.clip)
        let recorded = try LoopbackCamera.pictureDigests(path)
        #expect(recorded.count == frames && clip.count == 4 * LoopbackCamera.framesPerSecond)
        let positions = recorded.map { clip.firstIndex(of: $0) }
        let damaged = positions.indices.filter { positions[$0] == nil }
        #expect(
            positions.first??.isMultiple(of: LoopbackCamera.gop) == true,
            "starts at clip picture \(String(describing: positions.first)), not an IDR frame")
        #expect(damaged.isEmpty, "pictures \(damaged) of \(frames) are none of the clip's (\(p.stderr))")
        var jumped = 0
        for i in positions.indices.dropFirst() {
            guard let now = positions[i], let before = positions[i - 1], now != (before + 1) % clip.count else { continue }
            #expect(now % LoopbackCamera.gop == 0, "picture \(i) (clip \(now)) follows clip \(before) and is no IDR frame")
            jumped += (now - before - 1 + clip.count) % clip.count
        }
        #expect(jumped == skipped, "pictures jumped over: \(jumped), skipped: \(skipped)")
        #expect(p.stderr.isEmpty, "\(p.stderr)")
        if !damaged.isEmpty, let out = ProcessInfo.processInfo.environment["EVCAPTURE_SYSTEST_OUT"] {
            try? FileManager.default.copyItem(atPath: path, toPath: out + "/h264camera-damaged.mp4")
            try? FileManager.default.copyItem(atPath: camera.clip, toPath: out + "/h264camera-clip.ts")
            print(
                "h264 camera: pictures \(damaged) of \(frames) decode unlike the camera's (\(p.stderr)); kept as out/h264camera-damaged.mp4"
            )
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
        let rtspStarted = Date()
        try Self.rtspCarriesTheCamerasH264(camera, daemon: daemon, scratch: output.url.path)
        print("h264 camera: RTSP checked in \(Date().timeIntervalSince(rtspStarted)) s")
        #expect(daemon.stop() == 0, "\(daemon)")
        stopped = true
        let problem = camera.stop()
        #expect(problem == nil, "\(problem ?? "")")
    }

    /// The camera's H.264 in the page over WebRTC, without an encode (docs/live-view.md#webrtc):
    /// headless Chromium, in the guest beside the daemon, plays it (the page says `webrtc`, the
    /// picture is the camera's 640×480, frames decoded go on over 10 s, keyframes among them:
    /// the camera's, an IDR every 15 frames), and the daemon's log says its live H.264 is the
    /// camera's own, passed through, and never that it encodes.
    @Test(.timeLimit(.minutes(6)), .enabled(if: ChromiumPipe.executable != nil, "needs chromium"))
    func thePagePlaysTheCamerasH264OverWebRTC() throws {
        let camera = try LoopbackCamera()
        var stopped = false
        defer { if !stopped { camera.stop() } }
        let output = try ScratchDirectory(prefix: "h264webrtc")
        let daemon = try ReliabilityDaemon(config: Self.config(output: output.url.path, preRoll: 0.5))
        // GStreamer is loaded once RTSP listens (its first load reads every plugin: under
        // emulation longer than the page waits for an answer).
        try #require(
            pollUntil(timeout: .seconds(180)) { daemon.stderr.contains("RTSP on rtsp://127.0.0.1:\(Self.rtspPort)/live") }, "\(daemon)")
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = output.url.path
        let browser = try ChromiumPipe(
            url: "about:blank", directory: output.url.path, environment: env, arguments: ["--allow-loopback-in-peer-connection"])
        defer { browser.kill() }
        let session = try browser.attachToFirstPage(timeout: .seconds(90))
        try #require(browser.navigate("http://127.0.0.1:\(Self.port)/", session: session, timeout: .seconds(90)), "\(browser.transcript)")
        var shown: LivePagePlayback?
        #expect(
            pollUntil(timeout: .seconds(150)) {
                shown = try? LivePagePlayback(browser, session: session)
                return shown?.string("transport")?.isEmpty == false
            })
        let one = try #require(shown, "\(browser.transcript)\n\(daemon)")
        #expect(one.string("transport") == "webrtc" && one.string("picture") == "640x480", "\(one)\n\(daemon)")
        let playing = try LivePagePlayback(browser, session: session, window: 10)
        print("h264 camera: WebRTC \(one)\nh264 camera: over 10 s: \(playing)")
        #expect(playing.number("decoded1") > playing.number("decoded0"), "no frame decoded in 10 s: \(playing)")
        #expect(playing.number("keyframes") >= 1, "\(playing)")
        #expect(daemon.stderr.contains("live H.264: the camera's own, passed through"), "\(daemon)")
        #expect(!daemon.stderr.contains("live H.264: encoding"), "\(daemon)")
        #expect(daemon.stop() == 0, "\(daemon)")
        stopped = true
        let problem = camera.stop()
        #expect(problem == nil, "\(problem ?? "")")
    }

    /// H.264 is taken only when asked for: with the default order a camera that offers
    /// nothing else is `no usable format` (photos need pictures); asked for, it streams H.264
    /// at the camera's size; a camera without it (vivid) is `no usable format` naming H264.
    @Test(.timeLimit(.minutes(2))) func h264IsNegotiatedOnlyWhenAskedFor() throws {
        let camera = try LoopbackCamera()
        var stopped = false
        defer { if !stopped { camera.stop() } }
        let auto = #expect(throws: StreamingError.self) { _ = try VideoCaptureStream(path: LoopbackCamera.node) }
        #expect(
            auto?.code == .noUsableFormat && auto?.context.contains("offers only [H264]") == true, "\(String(describing: auto))")
        let asked = try VideoCaptureStream(path: LoopbackCamera.node, pixelFormats: [.h264])
        #expect(asked.format.pixelFormat == .h264 && asked.format.width == 640 && asked.format.height == 480, "\(asked.format)")
        // Its frames: access units, an IDR frame every 15 by the camera's frame counter (which
        // counts the frames it dropped too).
        var keyframes: [UInt32] = []
        for _ in 0..<30 {
            let frame = try asked.nextFrame(timeout: .seconds(5))
            if AnnexB.containsIDR(frame.bytes) { keyframes.append(frame.sequence) }
        }
        #expect(
            !keyframes.isEmpty && keyframes.allSatisfy { ($0 &- keyframes[0]) % UInt32(LoopbackCamera.gop) == 0 },
            "IDR frames at \(keyframes)")
        asked.close()
        let vivid = try #require(vividNode(), "needs vivid")
        let none = #expect(throws: StreamingError.self) { _ = try VideoCaptureStream(path: vivid, pixelFormats: [.h264]) }
        #expect(
            none?.code == .noUsableFormat && none?.context.contains("one of [H264] needed") == true, "\(String(describing: none))")
        stopped = true
        let problem = camera.stop()
        #expect(problem == nil, "\(problem ?? "")")
    }
}
