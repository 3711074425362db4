import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
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

        init(settings: LiveViewSettings = LiveViewSettings()) throws {
            hub = Hub(loop: loop, maxClients: settings.maxClients, frames: { nil }, logger: Logger(label: "test"))
            let recorded = recorded
            core = ServerCore(
                settings: settings, hub: hub, media: MediaDirectory(path: "/nonexistent"), snapshotQuality: 90,
                input: { i in recorded.list.withLock { $0.append(i) } })
            channel = EmbeddedChannel(loop: loop)
            try Self.setUp(channel, core)
        }

        static func setUp(_ channel: EmbeddedChannel, _ core: ServerCore) throws {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: false)
            try channel.pipeline.syncOperations.addHandler(HTTPConnection(server: core))
        }

        /// Another client of the same server.
        func connect() throws -> EmbeddedChannel {
            let c = EmbeddedChannel(loop: loop)
            try Self.setUp(c, core)
            return c
        }

        /// Sends raw bytes; returns everything written back so far.
        func send(_ text: String, on c: EmbeddedChannel? = nil) throws -> String {
            let c = c ?? channel
            _ = try? c.writeInbound(ByteBuffer(string: text))
            loop.run()
            return try received(on: c)
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
        let wrong = try h.send("POST /api/capture HTTP/1.1\r\nHost: cam\r\nAuthorization: Basic dmlld2VyOndyb25n\r\n\r\n")
        #expect(wrong.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"), "\(wrong)")
        #expect(h.inputs.isEmpty)
        let ok = try h.send("POST /api/capture HTTP/1.1\r\nHost: cam\r\nAuthorization: Basic dmlld2VyOm9wZW4gc2VzYW1l\r\n\r\n")
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
            PreviewFrame(jpeg: ByteBuffer(string: "JPEG\(t)"), time: t * 1_000_000, sequence: UInt32(t))
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

    @Test func anHTTP10ViewerGetsAPlainStream() throws {
        let h = try Harness()
        let head = try h.send("GET /stream.mjpg HTTP/1.0\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.0 200 OK\r\n") && !head.lowercased().contains("chunked"), "\(head)")
        h.hub.publish(PreviewFrame(jpeg: ByteBuffer(string: "JPEG"), time: 1, sequence: 1))
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
