#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Evdev
import Vocabulary
import Foundation
import Testing
import Recording

/// The live view (`[http]`, docs/live-view.md) on the real kernel: the daemon with vivid,
/// curl as the client, uinput for the buttons.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct LiveViewSystemTests {
    static let hasCurl = LiveViewClient.curl != nil

    func start(_ label: String, port: Int, http: String, session: String = "", devices: [UinputDevice]) throws -> (
        DaemonScratch, DaemonProcess
    ) {
        let vivid = try #require(vividNode())
        let scratch = try DaemonScratch(label)
        let config = try scratch.write(
            "evcapture.toml",
            """
            \(session)
            [camera]
            device = "none"
            capture-device = "\(vivid)"
            width = 640
            height = 480

            [output]
            directory = "\(scratch.output)"

            [http]
            listen = "127.0.0.1:\(port)"
            preview-width = 320
            \(http)
            """)
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        for node in devices.map(\.node) where daemon.waitFor(DaemonLines.deviceAdded(node)) == nil {
            daemon.terminate()
            throw ProcessError(argv: daemon.arguments, problem: "\(node) was never added:\n\(daemon.transcript)")
        }
        #expect(pollUntil(timeout: .seconds(20)) { daemon.stderr.contains("://127.0.0.1:\(port)/") }, "\(daemon.transcript)")
        return (scratch, daemon)
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func snapshotStreamEventsAndAPhotoFromThePage() throws {
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let port = 18081
        let (scratch, daemon) = try start("liveview", port: port, http: "", devices: [keys])
        defer { daemon.terminate() }
        let base = "http://127.0.0.1:\(port)"

        // The newest frame, full size, a valid JPEG.
        let snapshot = scratch.path + "/snapshot.jpg"
        let (status, r) = try LiveViewClient.request(["-D", scratch.path + "/snapshot.headers", "\(base)/snapshot.jpg"], output: snapshot)
        #expect(status == 200, "\(r)\n\(daemon.transcript)")
        let snapBytes = Array(try Data(contentsOf: URL(fileURLWithPath: snapshot)))
        let info = try JPEG.decode(snapBytes)
        #expect(info.width == 640 && info.warnings == 0, "\(info)")
        #expect(try String(contentsOfFile: scratch.path + "/snapshot.headers", encoding: .utf8).contains("X-Timestamp: "))

        // The stream: parts of JPEG at the preview size, their kernel times rising.
        let stream = scratch.path + "/stream.mjpg"
        try LiveViewClient.request(["--max-time", "4", "\(base)/stream.mjpg"], output: stream)
        let parts = LiveViewClient.parts(Array(try Data(contentsOf: URL(fileURLWithPath: stream))))
        #expect(parts.count >= 5, "\(parts.count) parts in 4 s\n\(daemon.transcript)")
        let times = parts.compactMap { $0.headers["x-timestamp"].flatMap(Double.init) }
        #expect(times.count == parts.count && zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "\(times)")
        for part in parts.prefix(3) {
            let i = try JPEG.decode(part.body)
            #expect(i.width == 320 && i.height == 240 && i.warnings == 0, "\(i)")
        }
        // Kernel times: CLOCK_MONOTONIC, the clock of the JSON lines (not the wall clock, not
        // from 0). A buffer's time is the driver's, not the moment it is handed over: vivid
        // stamps each buffer with its clock read plus 0.9 of a frame period (the end of the
        // frame, its default timestamp source), so the newest part can lie up to 0.9 of a frame
        // in the future. The median gap between parts is at least a frame period (parts are
        // frames, at most one per camera frame) and bounds that.
        let now = Double(monotonicNow().microseconds) / 1e6
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }.sorted()
        let frameBound = gaps.isEmpty ? 0 : gaps[gaps.count / 2]
        #expect(
            times.last.map { now - $0 < 30 && $0 - now <= frameBound } == true,
            "last part at \(times.last ?? 0), now \(now), median gap between parts \(frameBound) s")

        // Events: a press of a real (uinput) button reaches /events.
        let curl = try #require(LiveViewClient.curl)
        let events = try DaemonProcess(
            "liveview-events", executable: curl, arguments: ["-sSN", "--max-time", "60", "\(base)/events"], environment: scratch.environment
        )
        defer { events.terminate() }
        #expect(pollUntil(timeout: .seconds(10)) { events.stdout.contains(": evcapture") }, "\(events.transcript)")
        try keys.click(.volumeDown)
        #expect(
            pollUntil(timeout: .seconds(20)) {
                events.lines.contains {
                    $0.hasPrefix("data: ") && $0.contains("\"event\":\"capture\"") && $0.contains("\"node\":\"\(keys.node)\"")
                }
            }, "\(events.transcript)")

        // A photo from the page: the same path as a button, device "http".
        let from = daemon.objects.count
        let (posted, pr) = try LiveViewClient.request(["-X", "POST", "-H", "Origin: \(base)", "\(base)/api/capture"])
        #expect(posted == 202, "\(pr)")
        let ended = try #require(daemon.waitFor(from: from, DaemonLines.capture("ended", node: "http")), "\(daemon.transcript)")
        let press = try #require(ended.object.int("press"))
        #expect(ended.object.string("device") == "http" && ended.object.string("gesture") == "click")
        let photo = try #require(daemon.waitFor(timeout: .seconds(30), DaemonLines.action("photo", press: press)), "\(daemon.transcript)")
        let file = try #require(photo.object.string("file"))
        #expect(looksLikeJPEG(Array(try Data(contentsOf: URL(fileURLWithPath: file)))))

        // The listing names it; the download is the file.
        let listing = scratch.path + "/media.json"
        try LiveViewClient.request(["\(base)/api/media"], output: listing)
        let name = (file as NSString).lastPathComponent
        #expect(try String(contentsOfFile: listing, encoding: .utf8).contains("\"name\":\"\(name)\""))
        let download = scratch.path + "/download.jpg"
        #expect(try LiveViewClient.request(["\(base)/media/\(name)"], output: download).status == 200)
        #expect(try Data(contentsOf: URL(fileURLWithPath: download)) == Data(contentsOf: URL(fileURLWithPath: file)))

        // Nothing outside the output directory: not by .., not encoded, not by a symlink.
        #expect(symlink(scratch.path + "/evcapture.toml", scratch.output + "/config.jpg") == 0)
        for target in ["/media/../evcapture.toml", "/media/..%2Fevcapture.toml", "/media/%2E%2E%2Fevcapture.toml", "/media/config.jpg"] {
            let (s, rr) = try LiveViewClient.request(["--path-as-is", base + target], output: scratch.path + "/escaped")
            #expect(s == 404, "\(target): \(s) \(rr)")
        }
        #expect(try !String(contentsOfFile: listing, encoding: .utf8).contains("config.jpg"))
        // A POST from another site's page is refused, and takes no photo.
        let before = daemon.objects.count
        #expect(try LiveViewClient.request(["-X", "POST", "-H", "Origin: http://evil.example", "\(base)/api/capture"]).status == 403)
        // A page of another site rebound to 127.0.0.1 names itself in Host: nothing is answered.
        #expect(
            try LiveViewClient.request([
                "-X", "POST", "-H", "Host: evil.example", "-H", "Origin: http://evil.example", "\(base)/api/capture",
            ]).status == 403)
        #expect(try LiveViewClient.request(["-H", "Host: evil.example", "\(base)/snapshot.jpg"]).status == 403)
        Thread.sleep(forTimeInterval: 1)
        #expect(!daemon.objects[before...].contains { $0.event == "capture" }, "\(daemon.transcript)")
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func aSlowViewerHoldsUpNoOneAndTheLimitGives503() throws {
        let port = 18082
        let (_, daemon) = try start("liveview-slow", port: port, http: "max-clients = 2", devices: [])
        defer { daemon.terminate() }
        // A viewer that never reads: its socket fills, it is left behind.
        let slow = try LiveViewClient.slowClient(port: port, request: "GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        defer { close(slow) }
        Thread.sleep(forTimeInterval: 2)
        // A fast viewer meanwhile gets a steady stream.
        let stream = NSTemporaryDirectory() + "liveview-fast-\(getpid()).mjpg"
        defer { unlink(stream) }
        try LiveViewClient.request(["--max-time", "4", "http://127.0.0.1:\(port)/stream.mjpg"], output: stream)
        let parts = LiveViewClient.parts(Array(try Data(contentsOf: URL(fileURLWithPath: stream))))
        let times = parts.compactMap { $0.headers["x-timestamp"].flatMap(Double.init) }
        #expect(parts.count >= 5, "\(parts.count) parts in 4 s beside a stuck viewer\n\(daemon.transcript)")
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "\(times)")
        // Two viewers (the slow one and this one) are the limit: a third gets 503.
        let curl = try #require(LiveViewClient.curl)
        let secondStream = NSTemporaryDirectory() + "liveview-second-\(getpid()).mjpg"
        defer { unlink(secondStream) }
        let second = try DaemonProcess(
            "liveview-second", executable: curl,
            arguments: ["-sSN", "-o", secondStream, "--max-time", "30", "http://127.0.0.1:\(port)/stream.mjpg"],
            environment: ProcessInfo.processInfo.environment)
        defer { second.terminate() }
        // The second viewer holds its place once its stream has begun.
        #expect(
            pollUntil(timeout: .seconds(20)) {
                ((try? FileManager.default.attributesOfItem(atPath: secondStream))?[.size] as? Int ?? 0) > 0
            }, "the second viewer got nothing")
        let (third, r) = try LiveViewClient.request(["http://127.0.0.1:\(port)/stream.mjpg"])
        #expect(third == 503, "\(r)")
        #expect(daemon.isRunning, "\(daemon.transcript)")
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func credentialsOnANetworkAddressAndAnIdleConnectionIsClosed() throws {
        let port = 18083
        // The same on all addresses needs credentials: refused at start without them, asked for with them.
        let scratch = try DaemonScratch("liveview-open")
        let vivid = try #require(vividNode())
        let bare = try scratch.write(
            "bare.toml", "[camera]\ndevice = \"none\"\ncapture-device = \"\(vivid)\"\n[http]\nlisten = \"0.0.0.0:\(port)\"\n")
        let refused = try DaemonProcess(
            "liveview-refused", arguments: ["run", "--config", bare, "--json"], environment: scratch.environment)
        #expect(refused.waitForExit() == 1)
        #expect(
            refused.stderr.contains("bare.toml:5: http.listen \"0.0.0.0:\(port)\" is reachable from other machines"),
            "\(refused.transcript)")

        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"
            capture-device = "\(vivid)"
            [output]
            directory = "\(scratch.output)"
            [http]
            listen = "0.0.0.0:\(port)"
            username = "viewer"
            password = "open sesame"
            """)
        let open = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { open.terminate() }
        #expect(pollUntil(timeout: .seconds(20)) { open.stderr.contains("live view on http://0.0.0.0:\(port)/") }, "\(open.transcript)")
        let base = "http://127.0.0.1:\(port)"
        #expect(try LiveViewClient.request(["\(base)/snapshot.jpg"]).status == 401)
        #expect(try LiveViewClient.request(["\(base)/"]).status == 401)
        #expect(try LiveViewClient.request(["-u", "viewer:wrong password", "\(base)/snapshot.jpg"]).status == 401)
        #expect(try LiveViewClient.request(["-X", "POST", "\(base)/api/capture"]).status == 401)
        #expect(!open.objects.contains { $0.event == "capture" })
        #expect(try LiveViewClient.request(["-u", "viewer:open sesame", "\(base)/snapshot.jpg"]).status == 200)

        // A connection that sends nothing is closed (and one with half a request too).
        let silent = try LiveViewClient.slowClient(port: port, request: nil)
        defer { close(silent) }
        let half = try LiveViewClient.slowClient(port: port, request: "GET / HTTP/1.1\r\nHost: x\r\n")
        defer { close(half) }
        #expect(LiveViewClient.closedByServer(silent, within: .seconds(30)))
        #expect(LiveViewClient.closedByServer(half, within: .seconds(5)))
        // Oversized headers: 431, and the daemon runs on.
        let big = String(repeating: "a", count: 100_000)
        #expect(try LiveViewClient.request(["-u", "viewer:open sesame", "-H", "X-Big: \(big)", "\(base)/"]).status == 431)
        #expect(open.isRunning, "\(open.transcript)")
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func beforeALaunchAViewerStartsTheStreamAndItStopsAfterTheLastLeaves() throws {
        let port = 18084
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let (_, daemon) = try start(
            "liveview-launch", port: port, http: "",
            session: "[session]\nmode = \"launch\"\nlaunch-button = \"KEY_VOLUMEUP\"\n", devices: [keys])
        defer { daemon.terminate() }
        Thread.sleep(forTimeInterval: 1)
        #expect(!daemon.stderr.contains("capture stream started"), "\(daemon.transcript)")
        let stream = NSTemporaryDirectory() + "liveview-launch-\(getpid()).mjpg"
        defer { unlink(stream) }
        try LiveViewClient.request(["--max-time", "4", "http://127.0.0.1:\(port)/stream.mjpg"], output: stream)
        let parts = LiveViewClient.parts(Array(try Data(contentsOf: URL(fileURLWithPath: stream))))
        #expect(parts.count >= 3, "\(parts.count) parts before a launch\n\(daemon.transcript)")
        #expect(pollUntil(timeout: .seconds(10)) { daemon.stderr.contains("capture stream stopped") }, "\(daemon.transcript)")
        #expect(!daemon.objects.contains(where: DaemonLines.session("started")), "\(daemon.transcript)")
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl && TestCertificates.openssl != nil, "needs vivid, curl and openssl"))
    func withACertificateItSpeaksHTTPSOnly() throws {
        let port = 18086
        let scratch = try DaemonScratch("liveview-tls-certs")
        let ca = try TestCertificates(directory: scratch.path, name: "liveview")
        let server = try ca.server("liveview", names: ["127.0.0.1"])
        let (_, daemon) = try start(
            "liveview-tls", port: port, http: "certificate = \"\(server.certificate)\"\nprivate-key = \"\(server.key)\"", devices: [])
        defer { daemon.terminate() }
        let snapshot = scratch.path + "/tls.jpg"
        let (status, r) = try LiveViewClient.request(["--cacert", ca.caFile, "https://127.0.0.1:\(port)/snapshot.jpg"], output: snapshot)
        #expect(status == 200, "\(r)\n\(daemon.transcript)")
        #expect(looksLikeJPEG(Array(try Data(contentsOf: URL(fileURLWithPath: snapshot)))))
        // Plain HTTP on the TLS port gets no answer, and the daemon runs on.
        #expect(try LiveViewClient.request(["http://127.0.0.1:\(port)/"]).status == 0)
        #expect(daemon.isRunning, "\(daemon.transcript)")
    }
}
