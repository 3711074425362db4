#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Foundation
import Synchronization
import Testing

/// The live view against hostile clients on real sockets (docs/live-view.md#security): the
/// daemon with vivid in the VM, raw sockets that misbehave, curl as the owner, openssl as a
/// TLS client.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct LiveViewLimitsSystemTests {
    static let hasCurl = LiveViewClient.curl != nil
    static let credentials = "username = \"viewer\"\npassword = \"open sesame\""

    func start(_ label: String, port: Int, http: String = "") throws -> (DaemonScratch, DaemonProcess) {
        try LiveViewSystemTests().start(label, port: port, http: http, devices: [])
    }

    /// The lowest of a few samples: the daemon's private memory when nothing is in flight.
    func settledKB(_ pid: pid_t) -> Int {
        var lowest = Int.max
        for _ in 0..<5 {
            lowest = min(lowest, LiveViewClient.privateKB(pid))
            Thread.sleep(forTimeInterval: 0.3)
        }
        return lowest
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func pipeliningClientsThatDoNotReadAreBoundedAndTheirMemoryReturns() throws {
        let port = 18091
        let (_, daemon) = try start("liveview-pipeline", port: port)
        defer { daemon.terminate() }
        let base = "http://127.0.0.1:\(port)"
        // Every route the test takes before its last measure is taken once before its first: the
        // first snapshot starts the camera's stream and a thread, whose one-time costs (its
        // malloc arena, the stack glibc keeps for the next thread) are not the clients'.
        for path in ["/", "/api/media", "/snapshot.jpg", "/", "/api/media", "/snapshot.jpg"] {
            #expect(try LiveViewClient.request(["--max-time", "20", base + path]).status == 200)
        }
        // A client that pipelines and reads gets every answer, in order, one per turn of the
        // server's loop: the turns are counted on the real loop (a request held for the next
        // turn would otherwise wait for ever).
        let reader = try LiveViewClient.slowClient(
            port: port, request: String(repeating: "GET /api/media HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: 12))
        let answers = LiveViewClient.readUntil(reader, within: .seconds(10)) {
            String(decoding: $0, as: UTF8.self).components(separatedBy: "HTTP/1.1 200 OK\r\n").count > 12
        }
        close(reader)
        let answered = String(decoding: answers, as: UTF8.self).components(separatedBy: "HTTP/1.1 200 OK\r\n").count - 1
        #expect(answered == 12, "\(answered) of 12 pipelined requests answered (\(answers.count) bytes)")
        Thread.sleep(forTimeInterval: 1)
        let baseline = settledKB(daemon.pid)
        // Four clients, each sending 2 MB of requests for the page (~60,000 of them) and reading nothing.
        let requests = Array(String(repeating: "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: 60_000).utf8)
        var clients: [Int32] = []
        defer { for fd in clients { close(fd) } }
        var peak = baseline
        for _ in 0..<4 {
            let fd = try LiveViewClient.slowClient(port: port, request: nil)
            clients.append(fd)
            _ = LiveViewClient.sendUntilFull(fd, requests, within: .seconds(3))
            peak = max(peak, LiveViewClient.privateKB(daemon.pid))
        }
        for _ in 0..<10 {
            peak = max(peak, LiveViewClient.privateKB(daemon.pid))
            Thread.sleep(forTimeInterval: 0.3)
        }
        // Each holds its write buffer (256 KB) and one answer, not one answer per request.
        #expect(peak - baseline < 8 * 1024, "private memory \(baseline) KB before, \(peak) KB with 4 pipelining clients")
        // The owner is answered meanwhile.
        let (owner, r) = try LiveViewClient.request(["--max-time", "20", "\(base)/snapshot.jpg"])
        #expect(owner == 200, "\(r)")
        // Nothing taken for the progress deadline: the server closes them.
        #expect(
            pollUntil(timeout: .seconds(40)) { LiveViewClient.serverConnections(port: port) == 0 },
            "\(LiveViewClient.serverConnections(port: port)) connections still open")
        for fd in clients { close(fd) }
        clients = []
        Thread.sleep(forTimeInterval: 1)
        let after = settledKB(daemon.pid)
        #expect(after - baseline <= 1024, "private memory \(baseline) KB before, \(peak) KB during, \(after) KB after")
        print("liveview-pipeline: private memory \(baseline) KB before, \(peak) KB during, \(after) KB after 4 pipelining clients")
        #expect(daemon.isRunning, "\(daemon.transcript)")
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func aTricklingClientIsClosedTenSecondsAfterItsFirstByte() throws {
        let port = 18092
        let (_, daemon) = try start("liveview-trickle", port: port)
        defer { daemon.terminate() }
        let fd = try LiveViewClient.slowClient(port: port, request: "GET / HTTP/1.1\r\n")
        defer { close(fd) }
        let first = ContinuousClock.now
        // A byte every 2 s: an idle timer would never fire.
        var closed = false
        while !closed, ContinuousClock.now - first < .seconds(25) {
            closed = LiveViewClient.closedByServer(fd, within: .seconds(2))
            if !closed { _ = send(fd, "X", 1, Int32(MSG_NOSIGNAL)) }
        }
        let took = ContinuousClock.now - first
        #expect(closed && took >= .seconds(9) && took < .seconds(14), "closed: \(closed) after \(took)")
        // A request sent at once is answered as before.
        #expect(try LiveViewClient.request(["http://127.0.0.1:\(port)/"]).status == 200)
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func clientsWithoutCredentialsDoNotKeepTheOwnerOut() throws {
        let port = 18093
        let (_, daemon) = try start("liveview-slots", port: port, http: Self.credentials)
        defer { daemon.terminate() }
        let base = "http://127.0.0.1:\(port)"
        // 40 silent connections from ten other addresses (more than the 24 connections once
        // allowed in all), opened again as the server closes them; and clients collecting 401s.
        final class Flag: Sendable { let raised = Atomic(false) }
        let stop = Flag()
        let silent = Thread {
            var fds: [Int32] = []
            while !stop.raised.load(ordering: .relaxed) {
                fds.removeAll { fd in
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&p, 1, 0) > 0 else { return false }
                    close(fd)
                    return true
                }
                // Four addresses asking without credentials, each about once a second: a 401 and closed.
                if Int.random(in: 0..<10) < 4 {
                    let request = "GET /snapshot.jpg HTTP/1.1\r\nHost: cam\r\n\r\n"
                    if let fd = try? LiveViewClient.slowClient(port: port, request: request, from: "127.0.0.\(Int.random(in: 12..<16))") {
                        fds.append(fd)
                    }
                }
                var peer = 2
                while fds.count < 40, peer < 12 {
                    if let fd = try? LiveViewClient.slowClient(port: port, request: nil, from: "127.0.0.\(peer)") { fds.append(fd) }
                    peer += 1
                }
                usleep(100_000)
            }
            for fd in fds { close(fd) }
        }
        silent.start()
        defer { stop.raised.store(true, ordering: .relaxed) }
        Thread.sleep(forTimeInterval: 3)
        var statuses: [Int] = []
        for _ in 0..<5 {
            let (status, r) = try LiveViewClient.request(["--max-time", "20", "-u", "viewer:open sesame", "\(base)/snapshot.jpg"])
            statuses.append(status)
            if status != 200 { print("liveview-slots: \(r)") }
            Thread.sleep(forTimeInterval: 1)
        }
        #expect(statuses == [200, 200, 200, 200, 200], "\(statuses)\n\(daemon.transcript.suffix(2000))")
        #expect(daemon.isRunning)
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func aDownloadNobodyReadsIsAbandoned() throws {
        let port = 18094
        let (scratch, daemon) = try start("liveview-download", port: port)
        defer { daemon.terminate() }
        let file = scratch.output + "/big.mp4"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(count: 16 << 20)))
        let fd = try LiveViewClient.slowClient(port: port, request: "GET /media/big.mp4 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        defer { close(fd) }
        Thread.sleep(forTimeInterval: 5)
        #expect(LiveViewClient.serverConnections(port: port) == 1)
        // No byte taken for 20 s: closed (the socket buffers filled within the first seconds).
        #expect(pollUntil(timeout: .seconds(40)) { LiveViewClient.serverConnections(port: port) == 0 })
        #expect(try LiveViewClient.request(["-o", "/dev/null", "http://127.0.0.1:\(port)/media/big.mp4"]).status == 200)
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl && TestCertificates.openssl != nil, "needs vivid, curl and openssl"))
    func tlsIs12Or13WithForwardSecretAEADSuitesOnly() throws {
        let port = 18095
        let scratch = try DaemonScratch("liveview-tls-suites-certs")
        let ca = try TestCertificates(directory: scratch.path, name: "liveview")
        let server = try ca.server("liveview", names: ["127.0.0.1"])
        let (_, daemon) = try start(
            "liveview-tls-suites", port: port, http: "certificate = \"\(server.certificate)\"\nprivate-key = \"\(server.key)\"")
        defer { daemon.terminate() }
        let openssl = try #require(TestCertificates.openssl)
        func handshake(_ options: [String]) throws -> ProgramResult {
            try run(
                [openssl, "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "127.0.0.1", "-CAfile", ca.caFile, "-brief"]
                    + options, timeout: .seconds(20))
        }
        for (options, protocolName) in [(["-tls1_3"], "TLSv1.3"), (["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"], "TLSv1.2")] {
            let r = try handshake(options)
            #expect(r.status == 0 && (r.stdout + r.stderr).contains("Protocol version: \(protocolName)"), "\(options): \(r)")
        }
        let chacha = try handshake(["-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305"])
        #expect(chacha.status == 0, "\(chacha)")
        // TLS 1.1 and 1.0 (the client allowed to offer them at security level 0): the server
        // answers with a protocol-version alert.
        for old in ["-tls1_1", "-tls1"] {
            let r = try handshake([old, "-cipher", "DEFAULT@SECLEVEL=0"])
            #expect(r.status != 0 && (r.stdout + r.stderr).contains("alert protocol version"), "\(old): \(r)")
        }
        // CBC with a SHA-1 MAC, even with ECDHE: a handshake failure.
        let cbc = try handshake(["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA"])
        #expect(cbc.status != 0 && (cbc.stdout + cbc.stderr).contains("handshake failure"), "\(cbc)")
        #expect(daemon.isRunning)
    }

    @Test(.enabled(if: vividNode() != nil && hasCurl, "needs vivid and curl"))
    func headersHeadAndTheBackoffOverTheWire() throws {
        let port = 18096
        let (scratch, daemon) = try start("liveview-headers", port: port, http: Self.credentials)
        defer { daemon.terminate() }
        let base = "http://127.0.0.1:\(port)"
        let headers = scratch.path + "/headers"
        let (status, r) = try LiveViewClient.request(["-I", "-D", headers, "-u", "viewer:open sesame", "\(base)/"])
        #expect(status == 200, "\(r)")
        let head = try String(contentsOfFile: headers, encoding: .utf8)
        #expect(head.contains("frame-ancestors 'none'") && head.contains("X-Frame-Options: DENY"), "\(head)")
        #expect(head.contains("X-Content-Type-Options: nosniff") && head.contains("Content-Length: "), "\(head)")
        // Wrong credentials: three answered, then each earns a refusal twice as long (1, 2, 4 s):
        // guessed on until the refusal is 3 s or more (a guess while refused is not counted).
        func retryAfter() -> Int? {
            let text = (try? String(contentsOfFile: headers, encoding: .utf8)) ?? ""
            return text.split(separator: "\r\n").first { $0.hasPrefix("Retry-After: ") }.flatMap { Int($0.dropFirst(13)) }
        }
        for _ in 0..<3 { #expect(try LiveViewClient.request(["-u", "viewer:wrong password", "\(base)/"]).status == 401) }
        var refusedFor = 0
        for _ in 0..<12 where refusedFor < 3 {
            let (status, _) = try LiveViewClient.request(["-D", headers, "-u", "viewer:wrong password", "\(base)/"])
            #expect(status == 401 || status == 429)
            guard status == 429, let seconds = retryAfter() else { continue }
            refusedFor = seconds
            if seconds < 3 { Thread.sleep(forTimeInterval: Double(seconds)) }
        }
        #expect(refusedFor >= 3, "no refusal of 3 s or more")
        // Meanwhile even the right password is refused; after the wait it is let in.
        let (refused, rr) = try LiveViewClient.request(["-D", headers, "-u", "viewer:open sesame", "\(base)/"])
        #expect(refused == 429 && retryAfter() != nil, "\(rr)")
        Thread.sleep(forTimeInterval: Double(refusedFor) + 0.5)
        #expect(try LiveViewClient.request(["-u", "viewer:open sesame", "\(base)/"]).status == 200)
        #expect(
            daemon.stderr.contains("wrong credentials from 127.0.0.1"), "\(daemon.transcript.suffix(2000))")
    }
}
