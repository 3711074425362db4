#if canImport(Glibc)
import Glibc
#endif
import Foundation
import EvcaptureTesting
import Frames
import LiveH264
import LiveView
import Logging
import Movie
import Testing
@testable import WebRTC

/// WebRTC viewers through the live view's WHEP endpoint on this machine
/// (docs/live-view.md#webrtc): the same BarCamera as the RTSP tests, the shared H.264, the
/// live view's real server and GStreamer's webrtcbin; curl for the HTTP side and headless
/// Chromium for a real peer. In the VM lab only the page's MJPEG fallback runs
/// (Tests/SystemTests/LiveViewBrowserSystemTests.swift).
@Suite(.serialized) struct WebRTCTests {
    static let curl = "/usr/bin/curl"
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static let offer = chromiumLikeWHEPOffer

    struct Server {
        let server: LiveViewServer
        let viewers: WebRTCViewers
        let frames: FrameSource
        let port: Int
        let directory: String
        func stop() async {
            await server.stop()
            viewers.stop()
            frames.stopAndWait()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    static func server(credentials: Credentials? = nil, maxViewers: Int = 4, webRTCOn: Bool = true) async throws -> Server {
        let logger = Logger(label: "test")
        let frames = FrameSource(
            settings: StreamSettings(devicePath: "bar-camera"), opener: FrameStreamOpener { _ in RTSPServerTests.BarCamera() },
            logger: logger)
        let stream = LiveH264Stream(
            source: .init(frames: { frames }, settings: H264Settings(), encoder: { EncoderChoice.current(H264Settings()) }), logger: logger)
        var webRTC = WebRTCSettings()
        webRTC.localAddress = "127.0.0.1"
        webRTC.maxViewers = maxViewers
        let viewers = WebRTCViewers(settings: webRTC, stream: stream, logger: logger)
        var settings = LiveViewSettings()
        settings.listen = ListenAddress(host: "127.0.0.1", port: RTSPServerTests.freePort())
        settings.credentials = credentials
        settings.maxClients = 4  // MJPEG streams and event listeners: the page needs two
        settings.webRTC = webRTCOn
        let directory = NSTemporaryDirectory() + "whep-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let server = try LiveViewServer(
            settings: settings, outputDirectory: directory, hooks: LiveViewHooks(frames: { frames }, whep: viewers, input: { _ in }),
            logger: logger)
        try await server.start()
        return Server(server: server, viewers: viewers, frames: frames, port: settings.listen.port, directory: directory)
    }

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    /// One request with curl: its status, headers (lowercased names) and body.
    static func request(_ method: String, _ url: String, body: String? = nil, headers: [String] = []) throws -> Response {
        var argv = [curl, "-s", "-i", "-X", method, "--max-time", "30"]
        for h in headers { argv += ["-H", h] }
        if let body {
            let file = NSTemporaryDirectory() + "whep-body-\(getpid())"
            try body.write(toFile: file, atomically: true, encoding: .utf8)
            argv += ["--data-binary", "@" + file]
        }
        let text = try RTSPServerTests.output(argv + [url])
        let (head, rest) = text.range(of: "\r\n\r\n").map { (String(text[..<$0.lowerBound]), String(text[$0.upperBound...])) } ?? (text, "")
        var lines = head.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: fields, body: rest)
    }

    @Test func theOfferIsAnsweredWithHostCandidatesAndTheSessionEnds() async throws {
        let s = try await Self.server()
        let base = "http://127.0.0.1:\(s.port)"
        let r = try Self.request("POST", base + "/api/whep", body: Self.offer, headers: ["Content-Type: application/sdp"])
        #expect(r.status == 201, "\(r)")
        #expect(r.headers["content-type"] == "application/sdp")
        let location = try #require(r.headers["location"])
        #expect(location.hasPrefix("/api/whep/") && location.count > "/api/whep/".count + 16, "\(location)")
        // H.264 in the offer's packetization mode 1, sent only; every candidate a host one on
        // the address the live view listens on.
        #expect(r.body.contains("m=video 9 UDP/TLS/RTP/SAVPF 108"), "\(r.body)")
        #expect(r.body.contains("a=sendonly") && r.body.contains("a=rtpmap:108 H264/90000"), "\(r.body)")
        // A packet lost on the way is sent again when the viewer asks (NACK, RFC 4585) on the
        // offer's retransmission format (RFC 4588): without it one lost packet of a keyframe
        // costs a whole new keyframe, and on a lossy link every keyframe is lost in turn.
        let lines = r.body.components(separatedBy: "\r\n")
        #expect(lines.contains("a=rtcp-fb:108 nack") && lines.contains("a=rtcp-fb:108 nack pli"), "\(r.body)")
        let rtx = lines.first { $0.hasPrefix("a=rtpmap:") && $0.hasSuffix(" rtx/90000") }.map {
            $0.dropFirst("a=rtpmap:".count).prefix { $0 != " " }
        }
        #expect(rtx.map { lines.contains("a=fmtp:\($0) apt=108") } == true, "no retransmission format for H.264 in the answer: \(r.body)")
        // The retransmissions' SSRC is grouped with the picture's own, which the browser's
        // track is made of (an SSRC of 0 there, not yet known when the answer was made, and
        // Chromium decodes frames that never reach the page's <video>).
        let group = lines.first { $0.hasPrefix("a=ssrc-group:FID ") }.map { $0.split(separator: " ").dropFirst().map(String.init) } ?? []
        #expect(group.count == 2 && !group.contains("0"), "\(r.body)")
        #expect(group.allSatisfy { ssrc in lines.contains { $0.hasPrefix("a=ssrc:\(ssrc) msid:") } }, "\(r.body)")
        let candidates = lines.filter { $0.hasPrefix("a=candidate:") }
        #expect(!candidates.isEmpty, "\(r.body)")
        #expect(candidates.allSatisfy { $0.contains(" UDP ") && $0.contains(" 127.0.0.1 ") && $0.hasSuffix("typ host") }, "\(candidates)")
        #expect(s.viewers.viewers == 1)
        let ended = try Self.request("DELETE", base + location)
        #expect(ended.status == 200, "\(ended)")
        #expect(pollUntil(timeout: .seconds(5)) { s.viewers.viewers == 0 })
        #expect(try Self.request("DELETE", base + location).status == 404)
        await s.stop()
    }

    /// docs/live-view.md#webrtc: the endpoint is behind the live view's checks, and bounded.
    @Test func refusals() async throws {
        let s = try await Self.server(credentials: Credentials(username: "viewer", password: "correct horse"), maxViewers: 1)
        let base = "http://127.0.0.1:\(s.port)"
        let sdp = "Content-Type: application/sdp"
        #expect(try Self.request("POST", base + "/api/whep", body: Self.offer, headers: [sdp]).status == 401)
        #expect(
            try Self.request("POST", "http://viewer:wrong-one@127.0.0.1:\(s.port)/api/whep", body: Self.offer, headers: [sdp]).status == 401
        )
        let authorized = "http://viewer:correct%20horse@127.0.0.1:\(s.port)"
        let foreign = try Self.request("POST", authorized + "/api/whep", body: Self.offer, headers: [sdp, "Origin: http://evil.example"])
        #expect(foreign.status == 403, "\(foreign)")
        #expect(try Self.request("POST", authorized + "/api/whep", body: Self.offer, headers: ["Content-Type: text/plain"]).status == 415)
        let noH264 = Self.offer.replacingOccurrences(of: "H264", with: "VP9")
        let bad = try Self.request("POST", authorized + "/api/whep", body: noH264, headers: [sdp])
        #expect(bad.status == 400 && bad.body.contains("H.264"), "\(bad)")
        #expect(
            try Self.request("POST", authorized + "/api/whep", body: String(repeating: "a", count: 40_000), headers: [sdp]).status == 413)
        #expect(s.viewers.viewers == 0, "no refused offer made a session")
        let ok = try Self.request("POST", authorized + "/api/whep", body: Self.offer, headers: [sdp, "Origin: http://127.0.0.1:\(s.port)"])
        #expect(ok.status == 201, "\(ok)")
        // max-clients 1: the second viewer waits for the first to go.
        let full = try Self.request("POST", authorized + "/api/whep", body: Self.offer, headers: [sdp])
        #expect(full.status == 503 && full.body.contains("max-clients"), "\(full)")
        let location = try #require(ok.headers["location"])
        #expect(
            try Self.request(
                "PATCH", authorized + location, body: "a=end-of-candidates", headers: ["Content-Type: application/trickle-ice-sdpfrag"]
            ).status == 405)
        #expect(try Self.request("DELETE", base + location).status == 401, "ending a session needs the credentials too")
        #expect(try Self.request("DELETE", authorized + location, headers: ["Origin: http://evil.example"]).status == 403)
        #expect(try Self.request("DELETE", authorized + location).status == 200)
        await s.stop()
    }

    /// The page in a real browser: Chromium negotiates with the server, its `<video>` plays
    /// (its time advances, `getStats()` counts decoded frames) and the overlay over it follows
    /// the control's value as it changes; a second viewer decodes from
    /// its first frame (nothing dropped, no keyframe asked for) and, once its page is closed,
    /// its session ends (the page's `DELETE`).
    @Test(.enabled(if: ChromiumPipe.executable != nil, "needs chromium")) func chromiumPlaysThePageOverWebRTC() async throws {
        let s = try await Self.server()
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = s.directory
        let page = "http://127.0.0.1:\(s.port)/"
        let browser = try ChromiumPipe(
            url: "about:blank", directory: s.directory, environment: env, arguments: ["--allow-loopback-in-peer-connection"])
        let session = try browser.attachToFirstPage(timeout: .seconds(30))
        try #require(browser.navigate(page, session: session, timeout: .seconds(30)), "\(browser.transcript)")
        let one = try LivePagePlayback(browser, session: session)
        #expect(one.string("transport") == "webrtc", "\(one)")
        #expect(one.string("picture") == "320x240", "\(one)")
        #expect(one.number("time1") > one.number("time0"), "the video's time stands still: \(one)")
        #expect(one.number("decoded0") > 0 && one.number("decoded1") > one.number("decoded0"), "\(one)")
        #expect(s.viewers.viewers == 1, "\(one)")
        // A knob turned while the picture plays: the daemon's control lines (here written to
        // the server's event sink as the daemon writes them) move the overlay over the video.
        for (value, shown) in [(2.5, "2.5×"), (3.0, "3.0×")] {
            s.server.eventSink.send(
                #"{"event":"control","time":1,"control":"Zoom","value":\#(value),"min":1,"max":5,"format":"%.1f×","raw":\#(Int(value * 100))}"#
            )
            let overlay = try browser.evaluate(
                """
                (async () => { const $ = id => document.getElementById(id);
                  for (let i = 0; i < 100 && $("value").textContent !== "\(shown)"; i++) await new Promise(r => setTimeout(r, 100));
                  return [$("name").textContent, $("value").textContent, $("overlay").className, $("video").hidden, $("view").dataset.transport].join(" "); })()
                """, session: session)
            #expect(overlay == "Zoom \(shown)  false webrtc", "the overlay over the WebRTC video: \(overlay)")
        }

        let target = try #require(try browser.call("Target.createTarget", ["url": "about:blank"])["targetId"] as? String)
        let attached = try browser.call("Target.attachToTarget", ["targetId": target, "flatten": true])
        let second = try #require(attached["sessionId"] as? String)
        try #require(browser.navigate(page, session: second, timeout: .seconds(30)))
        let two = try LivePagePlayback(browser, session: second)
        #expect(two.string("transport") == "webrtc", "\(two)")
        #expect(two.number("decoded1") > two.number("decoded0") && two.number("decoded0") > 0, "\(two)")
        // A viewer that began mid-run would ask for a keyframe (a PLI) to decode anything;
        // frames dropped after decoding (a display deadline missed on a loaded machine) say
        // nothing about where it began.
        #expect(two.number("pli") == 0 && two.number("keyframes") >= 1, "the second viewer did not start at a keyframe: \(two)")
        #expect(s.viewers.viewers == 2)
        try browser.call("Target.closeTarget", ["targetId": target])
        #expect(pollUntil(timeout: .seconds(10)) { s.viewers.viewers == 1 }, "the closed page's session stayed")
        // A browser killed sends no DELETE: its session ends when ICE's consent checks go
        // unanswered (docs/live-view.md#webrtc).
        let killed = ContinuousClock.now
        browser.kill()
        #expect(pollUntil(timeout: .seconds(60)) { s.viewers.viewers == 0 }, "the killed browser's session stayed")
        print("webrtc: a killed browser's session ended after \(ContinuousClock.now - killed)")
        await s.stop()
    }

    /// The page shows MJPEG when its offer is refused (here: the one WebRTC viewer's place is
    /// taken, 503), and at once with `webrtc = false`.
    @Test(.enabled(if: ChromiumPipe.executable != nil, "needs chromium"), arguments: [true, false])
    func thePageFallsBackToMJPEG(_ webRTCOn: Bool) async throws {
        let s = try await Self.server(maxViewers: 1, webRTCOn: webRTCOn)
        if webRTCOn {
            let taken = try Self.request(
                "POST", "http://127.0.0.1:\(s.port)/api/whep", body: Self.offer, headers: ["Content-Type: application/sdp"])
            #expect(taken.status == 201)
        }
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = s.directory
        let browser = try ChromiumPipe(url: "about:blank", directory: s.directory, environment: env)
        let session = try browser.attachToFirstPage(timeout: .seconds(30))
        try #require(browser.navigate("http://127.0.0.1:\(s.port)/", session: session, timeout: .seconds(30)))
        let shown = try LivePagePlayback(browser, session: session)
        #expect(shown.string("transport") == "mjpeg", "\(shown)")
        #expect(shown.string("webrtcError") == (webRTCOn ? "api/whep: 503" : "WebRTC is off"), "\(shown)")
        #expect(
            try browser.evaluate(
                """
                (async () => { for (let i = 0; i < 100 && !document.getElementById("view").dataset.picture; i++) await new Promise(r => setTimeout(r, 100));
                  return document.getElementById("view").dataset.picture + " " + document.getElementById("live").hidden + " " + document.getElementById("video").hidden; })()
                """, session: session) == "320x240 false true")
        #expect(s.viewers.viewers == (webRTCOn ? 1 : 0))
        await s.stop()
    }
}

/// The offer's H.264 as the answer takes it (docs/live-view.md#webrtc). Pure.
@Suite struct SDPOfferTests {
    @Test func packetizationModeOneAndConstrainedBaselineArePreferred() throws {
        let chosen = try SDPOffer.h264(in: WebRTCTests.offer).get()
        #expect(chosen == SDPOffer.H264(payloadType: 108, profileLevelID: "42e01f"))
        // Without a constrained baseline one, the first in mode 1.
        let main = WebRTCTests.offer.replacingOccurrences(of: "profile-level-id=42e01f", with: "profile-level-id=4d001f")
        #expect(try SDPOffer.h264(in: main).get() == SDPOffer.H264(payloadType: 108, profileLevelID: "4d001f"))
    }

    @Test(arguments: [
        ("no video", WebRTCTests.offer.replacingOccurrences(of: "m=video", with: "m=audio"), "no video"),
        (
            "mode 0 only", WebRTCTests.offer.replacingOccurrences(of: "packetization-mode=1", with: "packetization-mode=0"),
            "packetization-mode=1"
        ),
        ("no H.264", WebRTCTests.offer.replacingOccurrences(of: "H264", with: "VP9"), "H.264"),
        ("a payload type out of the dynamic range", WebRTCTests.offer.replacingOccurrences(of: ":108 ", with: ":8 "), "H.264"),
        ("a profile that is not six hex digits", WebRTCTests.offer.replacingOccurrences(of: "42e01f", with: "42e0zz"), "H.264"),
        ("not SDP", "GET / HTTP/1.1\r\n\r\n", "no video"),
        ("empty", "", "no video"),
    ])
    func offersWithoutUsableH264AreRefused(_ what: String, _ offer: String, _ reason: String) {
        switch SDPOffer.h264(in: offer) {
        case .success(let h264): Issue.record("\(what): \(h264)")
        case .failure(let e): #expect(e.code == .badOffer && e.message.contains(reason), "\(what): \(e)")
        }
    }
}
