#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

@testable import LiveView

/// What one client may hold (docs/live-view.md#security), against the server's own pipeline
/// on embedded channels with the loop's clock driven by hand.
@Suite struct LimitsTests {
    typealias Harness = ConnectionTests.Harness

    /// Stands for a socket that takes nothing: writes are held (their promises pending)
    /// until it is told to take them; reads that reach it are counted.
    final class StuckSocket: ChannelOutboundHandler, RemovableChannelHandler {
        typealias OutboundIn = IOData
        var held: [(IOData, EventLoopPromise<Void>?)] = []
        var reads = 0
        var stuck = true

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            guard stuck else { return context.write(data, promise: promise) }
            held.append((unwrapOutboundIn(data), promise))
        }

        func flush(context: ChannelHandlerContext) { if !stuck { context.flush() } }

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }

        /// Everything held goes out (the client read it all).
        func drain(_ context: ChannelHandlerContext) {
            stuck = false
            for (data, promise) in held { context.write(NIOAny(data), promise: promise) }
            held = []
            context.flush()
        }

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            for (_, promise) in held { promise?.fail(ChannelError.ioOnClosedChannel) }
            held = []
            context.close(mode: mode, promise: promise)
        }
    }

    /// The status lines of the answers (a body does not end in a line break: the next
    /// answer's status line follows it directly).
    func statuses(_ reply: String) -> [String] {
        reply.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + $0.prefix { $0 != "\r\n" } }
    }

    @Test func aPipeliningClientThatDoesNotReadGetsNoMoreAnswersNorReads() throws {
        let h = try Harness()
        let stuck = StuckSocket()
        let c = try h.connect(first: stuck)
        // The socket takes nothing more: its buffer is over the high mark. Nothing is read.
        c.isWritable = false
        c.pipeline.fireChannelWritabilityChanged()
        let readsBefore = stuck.reads
        c.read()
        h.loop.run()
        #expect(stuck.reads == readsBefore, "read from a client that does not read")
        // What came before is not answered either.
        let requests = String(repeating: "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 10)
        _ = try h.send(requests, on: c)
        #expect(stuck.held.isEmpty, "\(stuck.held.count) writes while the socket takes nothing")
        // It reads: reading resumes, every request is answered, in order.
        c.isWritable = true
        stuck.stuck = false
        c.pipeline.fireChannelWritabilityChanged()
        h.settle()
        #expect(stuck.reads == readsBefore + 1)
        let replies = try h.received(on: c)
        #expect(statuses(replies).count == 10 && statuses(replies).allSatisfy { $0 == "HTTP/1.1 200 OK" }, "\(statuses(replies))")
        #expect(c.isActive)
    }

    @Test func moreQueuedRequestsThanTheBoundCloseTheConnection() throws {
        let h = try Harness()
        let bound = ConnectionPolicy().maximumQueuedRequests
        // At the bound: kept, and answered once the client reads.
        let atBound = try h.connect()
        atBound.isWritable = false
        _ = try h.send(String(repeating: "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", count: bound), on: atBound)
        #expect(atBound.isActive)
        atBound.isWritable = true
        atBound.pipeline.fireChannelWritabilityChanged()
        h.settle()
        #expect(statuses(try h.received(on: atBound)).count == bound)
        // One more: closed.
        let over = try h.connect()
        over.isWritable = false
        _ = try h.send(String(repeating: "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", count: bound + 1), on: over)
        #expect(!over.isActive)
    }

    @Test func aConnectionGetsOnePipelinedAnswerPerTurnOfTheLoop() throws {
        let h = try Harness()
        let turns = h.core.gatekeeper.turns
        let pipeliner = try h.connect(from: "10.0.0.9")
        let owner = try h.connect()
        // Five requests in one packet: the first is answered at once, the others wait.
        _ = try? pipeliner.writeInbound(ByteBuffer(string: String(repeating: "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 5)))
        h.loop.run()
        #expect(statuses(try h.received(on: pipeliner)) == ["HTTP/1.1 200 OK"])
        #expect(turns.waiting == 1)
        // Not in this turn, however long it lasts: the check comes again and finds it the same.
        h.loop.advanceTime(by: LoopTurns.recheck * 4)
        #expect(try h.received(on: pipeliner).isEmpty)
        // The owner's request, read in the next turn, is answered in it.
        turns.endTurn()
        _ = try? owner.writeInbound(ByteBuffer(string: "GET /api/media HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        #expect(statuses(try h.received(on: owner)) == ["HTTP/1.1 200 OK"])
        // Each later turn answers one more of the pipeliner's, in order, until none is left.
        for answered in 2...5 {
            h.loop.advanceTime(by: LoopTurns.recheck)
            #expect(statuses(try h.received(on: pipeliner)).count == 1, "turn \(answered)")
            turns.endTurn()
        }
        h.loop.advanceTime(by: LoopTurns.recheck)
        #expect(try h.received(on: pipeliner).isEmpty)
        #expect(turns.waiting == 0 && pipeliner.isActive)
    }

    @Test func aRequestHeadMustBeCompleteTenSecondsAfterItsFirstByte() throws {
        let h = try Harness()
        // A byte every 4 s: each would reset an idle timer; the deadline counts from the first.
        let trickle = try h.connect()
        _ = try h.send("GET / HTTP/1.1\r\n", on: trickle)
        for _ in 0..<2 {
            h.loop.advanceTime(by: .seconds(4))
            _ = try h.send("X", on: trickle)
        }
        #expect(trickle.isActive)
        h.loop.advanceTime(by: .milliseconds(2100))
        #expect(!trickle.isActive)
        // A head sent in pieces within the deadline is answered; the connection then idles
        // for up to 10 s before it is closed.
        let slow = try h.connect()
        _ = try h.send("GET / HTTP/1.1\r\n", on: slow)
        h.loop.advanceTime(by: .milliseconds(9900))
        let reply = try h.send("Host: localhost\r\n\r\n", on: slow)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(reply.prefix(100))")
        h.loop.advanceTime(by: .milliseconds(9900))
        #expect(slow.isActive)
        h.loop.advanceTime(by: .milliseconds(200))
        #expect(!slow.isActive)
        // Nothing at all: closed after the idle timeout.
        let silent = try h.connect()
        h.loop.advanceTime(by: .milliseconds(9900))
        #expect(silent.isActive)
        h.loop.advanceTime(by: .milliseconds(200))
        #expect(!silent.isActive)
    }

    @Test func aResponseTheClientTakesNothingOfIsAbandonedAfterTheProgressDeadline() throws {
        let h = try Harness()
        let stuck = StuckSocket()
        let c = try h.connect(first: stuck)
        _ = try h.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", on: c)
        #expect(!stuck.held.isEmpty)
        h.loop.advanceTime(by: .seconds(19))
        #expect(c.isActive)
        h.loop.advanceTime(by: .seconds(2))
        #expect(!c.isActive)
        // One that takes its bytes is not closed, however long it then watches.
        let fine = StuckSocket()
        let d = try h.connect(first: fine)
        _ = try h.send("GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n", on: d)
        h.loop.advanceTime(by: .seconds(5))
        let context = try d.pipeline.syncOperations.context(handler: fine)
        fine.drain(context)
        h.loop.advanceTime(by: .seconds(60))
        #expect(d.isActive)
    }

    @Test func clientsWithoutCredentialsKeepNeitherTheirSlotsNorTheOwners() throws {
        var settings = LiveViewSettings()
        settings.credentials = Credentials(username: "viewer", password: "open sesame")
        let policy = ConnectionPolicy()
        let h = try Harness(settings: settings)
        // One address holds at most its share of unauthenticated slots: its next displaces its oldest.
        var held = try (0..<policy.unauthenticatedPerPeer).map { _ in try h.connect(from: "10.0.0.2") }
        #expect(held.allSatisfy { $0.isActive })
        let fifth = try h.connect(from: "10.0.0.2")
        #expect(fifth.isActive && !held[0].isActive && held.dropFirst().allSatisfy { $0.isActive })
        held = Array(held.dropFirst()) + [fifth]
        #expect(h.core.gatekeeper.open.unauthenticated == 1 + policy.unauthenticatedPerPeer)
        // Others fill all the rest (the harness's own channel holds one).
        let perPeer = policy.unauthenticatedPerPeer
        for peer in 3..<(3 + (policy.unauthenticatedTotal - perPeer - 1) / perPeer) {
            held += try (0..<perPeer).map { _ in try h.connect(from: "10.0.0.\(peer)") }
        }
        while h.core.gatekeeper.open.unauthenticated < policy.unauthenticatedTotal { held.append(try h.connect(from: "10.0.0.99")) }
        #expect(held.allSatisfy { $0.isActive })
        // The owner comes from another address: a greedy peer's oldest makes room.
        let owner = try h.connect(from: "10.0.0.50")
        #expect(owner.isActive)
        #expect(held.filter { !$0.isActive }.count == 1)
        let reply = try h.send("GET / HTTP/1.1\r\nHost: cam\r\nAuthorization: Basic dmlld2VyOm9wZW4gc2VzYW1l\r\n\r\n", on: owner)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(reply.prefix(100))")
        #expect(h.core.gatekeeper.open.authenticated == 1)
        // A request without credentials is answered 401, and its connection closed.
        let asker = try #require(held.first { $0.isActive })
        let refused = try h.send("GET / HTTP/1.1\r\nHost: cam\r\n\r\n", on: asker)
        #expect(refused.hasPrefix("HTTP/1.1 401 Unauthorized\r\n") && refused.contains("Connection: close"), "\(refused)")
        #expect(!asker.isActive)
    }

    @Test func wrongCredentialsEarnAGrowingBackoffAndBoundedLogLines() throws {
        var settings = LiveViewSettings()
        settings.credentials = Credentials(username: "viewer", password: "open sesame")
        let (logger, log) = Self.recordingLogger()
        let h = try Harness(settings: settings, logger: logger)
        let right = "Authorization: Basic dmlld2VyOm9wZW4gc2VzYW1l\r\n"
        let wrong = "Authorization: Basic dmlld2VyOndyb25n\r\n"
        func attempt(_ authorization: String, from peer: String = "10.0.0.7") throws -> String {
            try h.send("GET / HTTP/1.1\r\nHost: cam\r\n\(authorization)\r\n", on: try h.connect(from: peer))
        }
        let policy = ConnectionPolicy()
        for _ in 0..<policy.freeFailures { #expect(try attempt(wrong).hasPrefix("HTTP/1.1 401 ")) }
        // The next wrong one earns 1 s: until then even the right password is refused.
        #expect(try attempt(wrong).hasPrefix("HTTP/1.1 401 "))
        let refused = try attempt(right)
        #expect(refused.hasPrefix("HTTP/1.1 429 Too Many Requests\r\n") && refused.contains("Retry-After: 1\r\n"), "\(refused)")
        // Another peer is not slowed by it.
        #expect(try attempt(right, from: "10.0.0.8").hasPrefix("HTTP/1.1 200 OK\r\n"))
        h.loop.advanceTime(by: .seconds(1))
        // Doubling: 2 s, 4 s…
        #expect(try attempt(wrong).hasPrefix("HTTP/1.1 401 "))
        h.loop.advanceTime(by: .milliseconds(1900))
        #expect(try attempt(right).contains("Retry-After: 1\r\n"))
        h.loop.advanceTime(by: .milliseconds(100))
        #expect(try attempt(wrong).hasPrefix("HTTP/1.1 401 "))
        #expect(try attempt(right).contains("Retry-After: 4\r\n"))
        h.loop.advanceTime(by: .seconds(4))
        // Success clears the count.
        #expect(try attempt(right).hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(try attempt(wrong).hasPrefix("HTTP/1.1 401 "))
        #expect(try attempt(right).hasPrefix("HTTP/1.1 200 OK\r\n"))
        // Logged with the address, one line per 10 s, the next one counting those left out.
        let lines = log.lines.filter { $0.contains("wrong credentials") }
        #expect(lines.count == 1 && lines[0].contains("10.0.0.7"), "\(lines)")
        h.loop.advanceTime(by: .seconds(10))
        _ = try attempt(wrong)
        let later = log.lines.filter { $0.contains("wrong credentials") }
        #expect(later.count == 2 && later[1].contains("6 more such lines left out"), "\(later)")
    }

    @Test func everyAnswerRefusesFramingAndSniffing() throws {
        var template = Array("/tmp/liveview-headers-XXXXXX".utf8CString)
        let dir = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        defer {
            unlink(dir + "/a.jpg")
            rmdir(dir)
        }
        let fd = open(dir + "/a.jpg", O_WRONLY | O_CREAT, 0o644)
        #expect(write(fd, "JPEG", 4) == 4)
        close(fd)
        let h = try Harness(media: dir)
        for target in ["/", "/nothing", "/api/media", "/media/a.jpg", "/stream.mjpg"] {
            let c = try h.connect()
            let reply = try h.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n", on: c)
            let head = reply.components(separatedBy: "\r\n\r\n")[0]
            let csp = head.components(separatedBy: "\r\n").filter { $0.lowercased().hasPrefix("content-security-policy:") }
            #expect(csp.count == 1 && csp[0].contains("frame-ancestors 'none'"), "\(target): \(head)")
            #expect(head.contains("X-Frame-Options: DENY") && head.contains("X-Content-Type-Options: nosniff"), "\(target): \(head)")
            let media = target.hasPrefix("/media/") || target == "/stream.mjpg"
            #expect(head.contains("Cross-Origin-Resource-Policy: same-origin") == media, "\(target): \(head)")
        }
        // The page's own policy is kept, the framing rule added to it.
        let page = try h.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", on: try h.connect())
        #expect(page.contains("default-src 'self'") && page.contains("script-src 'self' 'unsafe-inline'; frame-ancestors 'none'\r\n"))
    }

    @Test func headExpectAndARepeatedHost() throws {
        let h = try Harness()
        let head = try h.send("HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let length = try #require(
            head.components(separatedBy: "\r\n").first { $0.hasPrefix("Content-Length: ") }.flatMap { Int($0.dropFirst(16)) })
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && length > 1000 && head.hasSuffix("\r\n\r\n"), "\(head)")
        // The connection goes on: the next answer follows the head directly.
        #expect(try h.send("HEAD /api/media HTTP/1.1\r\nHost: localhost\r\n\r\n").hasPrefix("HTTP/1.1 200 OK\r\n"))
        let stream = try h.send("HEAD /stream.mjpg HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(stream.contains("multipart/x-mixed-replace") && stream.hasSuffix("\r\n\r\n"), "\(stream)")

        let continued = try h.connect()
        let interim = try h.send(
            "POST /api/capture HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n", on: continued)
        #expect(interim == "HTTP/1.1 100 Continue\r\n\r\n", "\(interim)")
        #expect(try h.send("{}", on: continued).hasPrefix("HTTP/1.1 202 Accepted\r\n"))
        let odd = try h.send("POST /api/capture HTTP/1.1\r\nHost: localhost\r\nExpect: something-else\r\n\r\n", on: try h.connect())
        #expect(odd.hasPrefix("HTTP/1.1 417 Expectation Failed\r\n"), "\(odd)")

        let twice = try h.send("GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n", on: try h.connect())
        #expect(twice.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(twice)")
        #expect(h.inputs == [.capture])
    }

    @Test func changingRequestsAreRateLimited() throws {
        let (logger, log) = Self.recordingLogger()
        let h = try Harness(logger: logger)
        let policy = ConnectionPolicy()
        var answers: [String] = []
        for _ in 0..<(policy.inputBurst + 5) {
            answers.append(String(try h.send("POST /api/capture HTTP/1.1\r\nHost: localhost\r\n\r\n").prefix(12)))
        }
        #expect(answers.filter { $0 == "HTTP/1.1 202" }.count == policy.inputBurst, "\(answers)")
        #expect(answers.filter { $0 == "HTTP/1.1 429" }.count == 5, "\(answers)")
        #expect(h.inputs.count == policy.inputBurst)
        #expect(log.lines.filter { $0.contains("refused (429)") }.count == 1, "\(log.lines)")
        h.loop.advanceTime(by: .seconds(1))
        #expect(try h.send("POST /api/capture HTTP/1.1\r\nHost: localhost\r\n\r\n").hasPrefix("HTTP/1.1 202 "))
    }

    static func recordingLogger() -> (Logger, RecordingLog) {
        let handler = RecordingLog()
        return (Logger(label: "liveview.test", factory: { _ in handler }), handler)
    }
}

final class RecordingLog: LogHandler, Sendable {
    private let recorded = Mutex<[String]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    func log(event: LogEvent) {
        recorded.withLock { $0.append("\(event.level): \(event.message)") }
    }
    var lines: [String] { recorded.withLock { $0 } }
}
