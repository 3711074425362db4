#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Evdev
import Foundation
import Testing

/// A recorded video as a person sees it: headless Chromium (run in the VM beside the daemon)
/// takes a name from the live view's `/api/media`, plays `/media/NAME` in a `<video>` element
/// and time advances through the picture the long press recorded. The same check refuses
/// what does not play: an MJPEG AVI recording (Chromium has no AVI demuxer), an MP4 with no
/// fragment (a header only: no frame to play), and bytes that are no video at all.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct VideoBrowserSystemTests {
    static func config(output: String, vivid: String, format: String, port: Int?) -> String {
        """
        [camera]
        device = "none"
        capture-device = "\(vivid)"
        width = 320
        height = 240
        fps = 10
        stream = "always"
        [capture]
        hold-threshold = 0.3
        [output]
        directory = "\(output)"
        video-format = "\(format)"
        [handlers.primary]
        click = "none"
        long-press = "video"
        [sound]
        play = "off"
        """ + (port.map { "\n[http]\nlisten = \"127.0.0.1:\($0)\"\n" } ?? "")
    }

    /// A long press held for `hold`; the `video` action line's file.
    static func record(_ daemon: DaemonProcess, _ keys: UinputDevice, hold: UInt32) throws -> String {
        try ReliabilityInputTests.press(keys, .volumeDown, 1)
        usleep(hold)
        try ReliabilityInputTests.press(keys, .volumeDown, 0)
        let line = try #require(
            daemon.waitFor(timeout: .seconds(90)) { $0.event == "action" && $0.string("action") == "video" }, "\(daemon.transcript)")
        return try #require(line.object.string("file"), "\(line.object)")
    }

    /// What the page saw of one file: `currentTime` samples while it played, the picture's
    /// size, the duration, the media error (0: none) and where a seek to 0.5 s landed.
    struct Playback: Decodable, CustomStringConvertible {
        var name: String
        var times: [Double]
        var width: Int
        var height: Int
        var duration: Double
        var error: Int
        var message: String
        var play: String?
        var seeked: Double?
        var description: String {
            "\(name): times \(times), \(width)×\(height), duration \(duration), error \(error) \(message) \(play ?? ""), seeked \(seeked.map { "\($0)" } ?? "-")"
        }
        /// Plays: no error, a picture, and time that advanced past one second, never backwards.
        var plays: Bool {
            error == 0 && width > 0 && height > 0 && (times.last ?? 0) >= 1.0 && zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }
        }
    }

    /// Plays `media/NAME` muted until one and a half seconds have played, it ended or failed,
    /// or `budget` seconds passed; then seeks back to 0.5 s.
    static let playScript = """
        (async (name, budget) => {
          const v = document.createElement("video");
          v.muted = true; v.preload = "auto"; v.src = "/media/" + encodeURIComponent(name);
          document.body.appendChild(v);
          const r = {name, times: []};
          const pause = ms => new Promise(f => setTimeout(f, ms));
          r.times.push(v.currentTime);
          try { await v.play(); } catch (e) { r.play = String(e); }
          const start = performance.now();
          while (performance.now() - start < budget * 1000 && !v.error && !v.ended && v.currentTime < 1.5) {
            r.times.push(v.currentTime); await pause(200);
          }
          r.times.push(v.currentTime);
          r.width = v.videoWidth; r.height = v.videoHeight;
          r.duration = Number.isFinite(v.duration) ? v.duration : -1;
          r.error = v.error ? v.error.code : 0; r.message = v.error ? v.error.message : "";
          if (!v.error && v.videoWidth > 0 && r.duration > 1) {
            v.pause();
            const seeked = new Promise(f => v.addEventListener("seeked", f, {once: true}));
            v.currentTime = 0.5;
            await Promise.race([seeked, pause(budget * 1000)]);
            r.seeked = v.currentTime;
          }
          v.remove();
          return JSON.stringify(r);
        })
        """

    @Test(
        .timeLimit(.minutes(10)),
        .enabled(if: vividNode() != nil && ChromiumPipe.executable != nil, "needs vivid and chromium"))
    func aRecordedMP4PlaysInChromiumFromTheListingAndWhatIsNotPlayableDoesNot() throws {
        let vivid = try #require(vividNode())
        let port = 18086
        let scratch = try DaemonScratch("video-browser")
        let keys = try UinputDevice(ReliabilityInputTests.keys("evcapture browser shutter"), autorepeat: false)
        defer { keys.destroy() }

        // An MJPEG AVI recording first (a daemon of its own: the format is the whole config's).
        let aviConfig = try scratch.write(
            "avi.toml", Self.config(output: scratch.output, vivid: vivid, format: "avi", port: nil))
        let aviDaemon = try DaemonProcess(
            scratch.label + "-avi", arguments: ["run", "--config", aviConfig, "--json"], environment: scratch.environment)
        try #require(aviDaemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(aviDaemon.transcript)")
        usleep(1_000_000)
        let avi = try Self.record(aviDaemon, keys, hold: 2_000_000)
        #expect(aviDaemon.terminate() == 0, "\(aviDaemon.transcript)")

        // The MP4 recording, by the daemon that then serves the live view.
        let config = try scratch.write("mp4.toml", Self.config(output: scratch.output, vivid: vivid, format: "mp4", port: port))
        let daemon = try DaemonProcess(
            scratch.label, arguments: ["run", "--config", config, "--json", "--log-level", "debug"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")
        #expect(
            pollUntil(timeout: .seconds(20)) { daemon.stderr.contains("live view on http://127.0.0.1:\(port)/") }, "\(daemon.transcript)")
        usleep(1_000_000)
        let mp4 = try Self.record(daemon, keys, hold: 3_000_000)
        let mp4Name = (mp4 as NSString).lastPathComponent
        let aviName = (avi as NSString).lastPathComponent

        // The same recording cut after its header (`ftyp` and the empty `moov`): no fragment,
        // no frame; and bytes that are no video.
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: mp4)))
        var offset = 0
        var headerEnd: Int?
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            guard size >= 8 else { break }
            offset += size
            if type == "moov" {
                headerEnd = offset
                break
            }
        }
        let headerOnly = try #require(headerEnd, "no moov box in \(mp4)")
        try Data(bytes[..<headerOnly]).write(to: URL(fileURLWithPath: scratch.output + "/header-only.mp4"))
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }).write(
            to: URL(fileURLWithPath: scratch.output + "/noise.mp4"))

        // Byte ranges, as the browser will ask for them.
        let url = "http://127.0.0.1:\(port)"
        let part = try run("curl", "-sS", "-r", "0-99", "-o", scratch.path + "/first100", "-w", "%{http_code}", "\(url)/media/\(mp4Name)")
        #expect(part.stdout == "206", "\(part)")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: scratch.path + "/first100"))) == Array(bytes.prefix(100)))
        let past = try run("curl", "-sS", "-r", "\(bytes.count)-", "-o", "/dev/null", "-w", "%{http_code}", "\(url)/media/\(mp4Name)")
        #expect(past.stdout == "416", "\(past)")

        // The browser: the listing, then each file in a <video>.
        let browser = try ChromiumPipe(url: "about:blank", directory: scratch.path, environment: scratch.environment)
        // The page target appears once the browser has started (a minute under emulation).
        let session = try browser.attachToFirstPage(timeout: .seconds(180))
        // A navigation can be lost under emulation (the browser's network service was seen
        // restarting in its first minute): asked again until the listing is the document.
        var loaded = false
        for _ in 0..<4 where !loaded {
            _ = try? browser.call("Page.navigate", ["url": "\(url)/api/media"], session: session)
            loaded = pollUntil(timeout: .seconds(60)) {
                (try? browser.evaluate("location.href + ' ' + document.readyState", session: session)) == "\(url)/api/media complete"
            }
        }
        try #require(loaded, "the listing did not load\n\(browser.transcript)")
        let listing = try browser.evaluate(
            "fetch('/api/media').then(r => r.json()).then(l => JSON.stringify(l.files.map(f => f.kind + ' ' + f.name)))", session: session)
        let listed = Set(try JSONDecoder().decode([String].self, from: Data(listing.utf8)))
        #expect(listed.isSuperset(of: ["video \(mp4Name)", "video \(aviName)", "video header-only.mp4", "video noise.mp4"]), "\(listed)")

        func play(_ name: String, budget: Int) throws -> Playback {
            let text = try browser.evaluate(
                "\(Self.playScript)(\(String(decoding: try JSONEncoder().encode(name), as: UTF8.self)), \(budget))", session: session,
                timeout: .seconds(Int64(budget) * 2 + 60))
            return try JSONDecoder().decode(Playback.self, from: Data(text.utf8))
        }

        let recording = try play(mp4Name, budget: 90)
        print("chromium: \(recording)")
        #expect(recording.plays, "\(recording)\n\(daemon.transcript)")
        // The picture as ffprobe (another demuxer and decoder) sees it: vivid gives 320×180
        // for 320×240.
        let size = try run(
            "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0:s=x", mp4)
        #expect(
            size.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(recording.width)x\(recording.height)", "\(size) \(recording)")
        #expect(recording.duration > 2 && recording.duration < 5, "a 3 s hold: \(recording)")
        #expect(abs((recording.seeked ?? -1) - 0.5) < 0.2, "\(recording)")
        // The browser asked for byte ranges, and got them.
        #expect(daemon.stderr.contains("GET /media/\(mp4Name): 206"), "\(daemon.stderr)")

        let mjpeg = try play(aviName, budget: 30)
        print("chromium: \(mjpeg)")
        #expect(!mjpeg.plays && mjpeg.error == 4, "MEDIA_ERR_SRC_NOT_SUPPORTED expected: \(mjpeg)")
        let header = try play("header-only.mp4", budget: 30)
        print("chromium: \(header)")
        #expect(!header.plays && (header.times.last ?? 0) < 0.1, "\(header)")
        let noise = try play("noise.mp4", budget: 30)
        print("chromium: \(noise)")
        #expect(!noise.plays && noise.error == 4, "\(noise)")
    }
}
