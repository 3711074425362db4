#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Vocabulary
import Testing

@testable import LiveView

/// The connection handler behind NIOHTTP1's parser, on an embedded channel: what a client
/// sends, what it gets back.
@Suite struct ConnectionTests {
    final class Inputs: Sendable {
        let list = Mutex<[LiveViewInput]>([])
    }

    final class Harness {
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel
        let hub: Hub
        let core: ServerCore
        let recorded = Inputs()
        var inputs: [LiveViewInput] { recorded.list.withLock { $0 } }

        init(
            settings: LiveViewSettings = LiveViewSettings(), policy: ConnectionPolicy? = nil, media: String = "/nonexistent",
            logger: Logger = Logger(label: "test")
        ) throws {
            hub = Hub(loop: loop, maxClients: settings.maxClients, frames: { nil }, logger: logger)
            let recorded = recorded
            core = ServerCore(
                settings: settings, hub: hub, media: MediaDirectory(path: media), snapshotQuality: 90, policy: policy,
                input: { i in recorded.list.withLock { $0.append(i) } })
            channel = EmbeddedChannel(loop: loop)
            try Self.setUp(channel, core, peer: "127.0.0.1")
        }

        /// The server's own pipeline (ServerCore.configure), on a channel connected from `peer`.
        static func setUp(_ channel: EmbeddedChannel, _ core: ServerCore, peer: String, first: (any ChannelHandler)? = nil) throws {
            if let first { try channel.pipeline.syncOperations.addHandler(first) }
            try core.configure(channel, tls: nil)
            let address = try SocketAddress(ipAddress: peer, port: 40000)
            channel.remoteAddress = address
            try channel.connect(to: address).wait()
        }

        /// Another client of the same server; `first`: a handler before the server's (a socket
        /// that takes nothing, say).
        func connect(from peer: String = "127.0.0.1", first: (any ChannelHandler)? = nil) throws -> EmbeddedChannel {
            let c = EmbeddedChannel(loop: loop)
            try Self.setUp(c, core, peer: peer, first: first)
            return c
        }

        /// Sends raw bytes; returns everything written back so far.
        func send(_ text: String, on c: EmbeddedChannel? = nil) throws -> String {
            let c = c ?? channel
            _ = try? c.writeInbound(ByteBuffer(string: text))
            settle()
            return try received(on: c)
        }

        /// Runs the loop, and then more of its turns while a pipelined request waits for one
        /// (``LoopTurns``: an embedded loop has no turns of its own).
        func settle() {
            loop.run()
            var turns = 0
            while core.gatekeeper.turns.waiting > 0, turns < 100 {
                core.gatekeeper.turns.endTurn()
                loop.advanceTime(by: LoopTurns.recheck)
                turns += 1
            }
        }

        func received(on c: EmbeddedChannel? = nil) throws -> String {
            let c = c ?? channel
            var out = ""
            while let b = try c.readOutbound(as: ByteBuffer.self) { out += String(buffer: b) }
            return out
        }
    }

    @Test func thePageIsServed() throws {
        let h = try Harness()
        let reply = try h.send("GET / HTTP/1.1\r\nHost: localhost:8080\r\n\r\n")
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(reply.prefix(200))")
        #expect(reply.contains("<img id=\"live\"") && reply.contains("$(\"live\").src = \"stream.mjpg\""))
    }

    /// A video as a browser's `<video>` asks for it: byte ranges (206), the whole file with
    /// `Accept-Ranges` (200), 416 past the end, a malformed range ignored.
    @Test func mediaIsServedInByteRanges() throws {
        var template = Array("/tmp/liveview-range-XXXXXX".utf8CString)
        let dir = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        defer {
            unlink(dir + "/clip.mp4")
            rmdir(dir)
        }
        let content = (0..<1000).map { String(UnicodeScalar(UInt8(65 + $0 % 26))) }.joined()
        let fd = open(dir + "/clip.mp4", O_WRONLY | O_CREAT, 0o644)
        #expect(content.withCString { write(fd, $0, 1000) } == 1000)
        close(fd)
        let h = try Harness(media: dir)
        func get(_ range: String?) throws -> (head: String, body: String) {
            let reply = try h.send("GET /media/clip.mp4 HTTP/1.1\r\nHost: localhost\r\n\(range.map { "Range: \($0)\r\n" } ?? "")\r\n")
            let parts = reply.components(separatedBy: "\r\n\r\n")
            return (parts[0], parts.dropFirst().joined(separator: "\r\n\r\n"))
        }
        let whole = try get(nil)
        #expect(whole.head.hasPrefix("HTTP/1.1 200 OK\r\n") && whole.head.contains("Accept-Ranges: bytes"), "\(whole.head)")
        #expect(whole.head.contains("Content-Type: video/mp4") && whole.head.contains("Content-Length: 1000"), "\(whole.head)")
        #expect(whole.body == content)

        let first = try get("bytes=0-0")
        #expect(first.head.hasPrefix("HTTP/1.1 206 Partial Content\r\n"), "\(first.head)")
        #expect(first.head.contains("Content-Range: bytes 0-0/1000") && first.head.contains("Content-Length: 1\r\n"), "\(first.head)")
        #expect(first.body == "A")

        let open = try get("bytes=0-")
        #expect(open.head.contains("Content-Range: bytes 0-999/1000"), "\(open.head)")
        #expect(open.body == content)

        let last = try get("bytes=-3")
        #expect(last.head.contains("Content-Range: bytes 997-999/1000") && last.body == String(content.suffix(3)), "\(last)")

        let middle = try get("bytes=26-51")
        #expect(middle.body == "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "\(middle)")

        // The connection stays usable after each: a past-the-end range is 416, with the size.
        let past = try get("bytes=1000-")
        #expect(past.head.hasPrefix("HTTP/1.1 416 Range Not Satisfiable\r\n"), "\(past.head)")
        #expect(past.head.contains("Content-Range: bytes */1000"), "\(past.head)")

        let malformed = try get("bytes=5-4")
        #expect(malformed.head.hasPrefix("HTTP/1.1 200 OK\r\n") && malformed.body == content, "\(malformed.head)")
        let several = try get("bytes=0-1,5-6")
        #expect(several.head.hasPrefix("HTTP/1.1 200 OK\r\n") && several.body == content, "\(several.head)")
    }

    @Test func garbageIs400() throws {
        let h = try Harness()
        let reply = try h.send("HELLO THERE\r\n\r\n")
        #expect(reply.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(reply)")
        #expect(!h.channel.isActive)
    }

    @Test func oversizedHeadersAre431() throws {
        let h = try Harness()
        let reply = try h.send("GET / HTTP/1.1\r\nHost: localhost:8080\r\nX-Big: \(String(repeating: "a", count: 100_000))\r\n\r\n")
        #expect(reply.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "\(reply.prefix(200))")
    }

    @Test func aLargeBodyIs413() throws {
        let h = try Harness()
        let reply = try h.send("POST /api/capture HTTP/1.1\r\nHost: localhost:8080\r\nContent-Length: 5000\r\n\r\n")
        #expect(reply.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), "\(reply)")
        #expect(h.inputs.isEmpty)
        let chunked = try Harness()
        let body = String(repeating: "x", count: 2000)
        let r2 = try chunked.send(
            "POST /api/capture HTTP/1.1\r\nHost: localhost:8080\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n\(body)\r\n0\r\n\r\n")
        #expect(r2.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), "\(r2)")
        #expect(chunked.inputs.isEmpty)
    }

    @Test func credentialsAreRequiredWhenConfigured() throws {
        var settings = LiveViewSettings()
        settings.credentials = Credentials(username: "viewer", password: "open sesame")
        let h = try Harness(settings: settings)
        let refused = try h.send("GET /snapshot.jpg HTTP/1.1\r\nHost: cam\r\n\r\n")
        #expect(refused.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"), "\(refused)")
        #expect(refused.contains("WWW-Authenticate: Basic realm=\"evcapture\""))
        // A 401 closes its connection (docs/live-view.md#security): each attempt on a new one.
        #expect(!h.channel.isActive)
        let wrong = try h.send(
            "POST /api/capture HTTP/1.1\r\nHost: cam\r\nAuthorization: Basic dmlld2VyOndyb25n\r\n\r\n", on: try h.connect())
        #expect(wrong.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"), "\(wrong)")
        #expect(h.inputs.isEmpty)
        let ok = try h.send(
            "POST /api/capture HTTP/1.1\r\nHost: cam\r\nAuthorization: Basic dmlld2VyOm9wZW4gc2VzYW1l\r\n\r\n", on: try h.connect())
        #expect(ok.hasPrefix("HTTP/1.1 202 Accepted\r\n"), "\(ok)")
        #expect(h.inputs == [.capture])
    }

    @Test func withoutCredentialsOnlyLoopbackNamesAreAnswered() throws {
        let h = try Harness()
        // A page of another site whose name was pointed at 127.0.0.1 (DNS rebinding).
        let rebound = try h.send("POST /api/capture HTTP/1.1\r\nHost: evil.example:8080\r\nOrigin: http://evil.example:8080\r\n\r\n")
        #expect(rebound.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(rebound)")
        #expect(h.inputs.isEmpty)
        let page = try h.connect()
        let r = try h.send("GET /media/a.jpg HTTP/1.1\r\nHost: cam\r\n\r\n", on: page)
        #expect(r.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(r)")
        let ok = try h.connect()
        #expect(try h.send("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", on: ok).hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    @Test func aChangingRequestFromAnotherOriginIs403() throws {
        let h = try Harness()
        let refused = try h.send("POST /api/control/step?by=2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: http://evil.example\r\n\r\n")
        #expect(refused.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(refused)")
        let ok = try h.send("POST /api/control/step?by=2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: http://127.0.0.1:8080\r\n\r\n")
        #expect(ok.hasPrefix("HTTP/1.1 202 Accepted\r\n"), "\(ok)")
        let get = try h.send("GET /api/capture HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
        #expect(get.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n") && get.contains("Allow: POST"), "\(get)")
        #expect(h.inputs == [.step(2)])
    }

    @Test func aSlowViewerGetsOnlyTheNewestFrame() throws {
        let h = try Harness()
        let head = try h.send("GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.contains("multipart/x-mixed-replace; boundary=evcaptureframe"), "\(head)")
        func frame(_ t: Int64) -> PreviewFrame {
            PreviewFrame(jpeg: ByteBuffer(string: "JPEG\(t)"), time: Timestamp(microseconds: t * 1_000_000), sequence: UInt32(t))
        }

        h.hub.publish(frame(1))
        h.loop.run()
        let first = try h.received()
        #expect(first.contains("X-Timestamp: 1.000000") && first.contains("JPEG1"), "\(first)")

        // The socket takes nothing: frames 2, 3, 4 arrive; only 4 is kept.
        h.channel.isWritable = false
        for t in 2...4 { h.hub.publish(frame(Int64(t))) }
        h.loop.run()
        #expect(try h.received().isEmpty)
        h.channel.isWritable = true
        h.channel.pipeline.fireChannelWritabilityChanged()
        h.loop.run()
        let later = try h.received()
        #expect(later.contains("JPEG4") && !later.contains("JPEG2") && !later.contains("JPEG3"), "\(later)")
        #expect(later.components(separatedBy: "--evcaptureframe").count == 2, "\(later)")
    }

    /// A viewer counts as able to take a frame while its socket takes more and it holds none
    /// (docs/live-view.md#frames); one that was full while the feed stopped
    /// encoding gets the newest frame encoded for it, not the one it held.
    @Test func aFullViewerIsNotReadyAndDropsItsHeldFrameWhenTheFeedPaused() throws {
        let h = try Harness()
        #expect(!h.hub.demand.anyReady)
        _ = try h.send("GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(h.hub.demand.anyReady)
        func frame(_ t: Int64) -> PreviewFrame {
            PreviewFrame(jpeg: ByteBuffer(string: "JPEG\(t)"), time: Timestamp(microseconds: t * 1_000_000), sequence: UInt32(t))
        }
        h.channel.isWritable = false
        h.channel.pipeline.fireChannelWritabilityChanged()
        h.loop.run()
        #expect(!h.hub.demand.anyReady, "a full socket counted as ready")
        h.hub.publish(frame(1))
        h.loop.run()
        #expect(!h.hub.demand.anyReady)
        // The feed kept encoding (another viewer could take frames): the held frame is sent.
        h.channel.isWritable = true
        h.channel.pipeline.fireChannelWritabilityChanged()
        h.loop.run()
        #expect(try h.received().contains("JPEG1"))
        #expect(h.hub.demand.anyReady)
        // The feed paused while it was full: the held frame is older than the camera's newest.
        h.channel.isWritable = false
        h.channel.pipeline.fireChannelWritabilityChanged()
        h.hub.publish(frame(2))
        h.loop.run()
        h.hub.demand.pause(waitingAtMost: .zero)
        h.channel.isWritable = true
        h.channel.pipeline.fireChannelWritabilityChanged()
        h.loop.run()
        #expect(!(try h.received().contains("JPEG2")), "the held frame was sent after the feed paused")
        #expect(h.hub.demand.anyReady)
        // Leaving: nobody is ready.
        _ = try h.channel.close().wait()
        h.loop.run()
        #expect(!h.hub.demand.anyReady)
    }

    @Test func anHTTP10ViewerGetsAPlainStream() throws {
        let h = try Harness()
        let head = try h.send("GET /stream.mjpg HTTP/1.0\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.0 200 OK\r\n") && !head.lowercased().contains("chunked"), "\(head)")
        h.hub.publish(PreviewFrame(jpeg: ByteBuffer(string: "JPEG"), time: Timestamp(microseconds: 1), sequence: 1))
        h.loop.run()
        let part = try h.received()
        #expect(part.hasPrefix("--evcaptureframe\r\n") && part.hasSuffix("\r\n\r\nJPEG\r\n"), "\(part)")
    }

    @Test func beyondMaxClientsIs503() throws {
        var settings = LiveViewSettings()
        settings.maxClients = 2
        let h = try Harness(settings: settings)
        let events = try h.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(events.hasPrefix("HTTP/1.1 200 OK\r\n") && events.contains("text/event-stream"), "\(events)")
        let viewer = try h.connect()
        let stream = try h.send("GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: viewer)
        #expect(stream.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(stream)")
        let third = try h.connect()
        let refused = try h.send("GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: third)
        #expect(refused.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), "\(refused)")
        // Events reach the listener; once the viewer leaves there is room again.
        h.hub.publish(line: "{\"event\":\"capture\"}")
        h.loop.run()
        #expect(try h.received().contains("data: {\"event\":\"capture\"}\n\n"))
        _ = try? viewer.finish()
        h.loop.run()
        let fourth = try h.connect()
        let admitted = try h.send("GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: fourth)
        #expect(admitted.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(admitted)")
    }
}
