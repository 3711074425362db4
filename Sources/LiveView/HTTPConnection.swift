#if canImport(Glibc)
import Glibc
#endif
import Vocabulary
import NIOCore
import NIOHTTP1
import Output

/// One client connection: parsed requests (NIOHTTP1) in, responses out. Runs on the
/// server's event loop only, and never blocks it: frames come ready-encoded, files are read
/// a chunk at a time as the socket takes them.
final class HTTPConnection: ChannelInboundHandler, RemovableChannelHandler {
    /// The answer to an input that was taken (`POST /api/input`).
    static let accepted = JSONValue.object([("accepted", .bool(true))]).encoded

    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// A POST body larger than this is refused (413): no endpoint takes one, but WHEP.
    static let maximumBody = 1024
    /// A WHEP offer's SDP (a browser's is 5 to 10 KB).
    static let maximumOffer = 32 * 1024
    /// How much of a file is read per write.
    static let fileChunk = 64 * 1024
    /// Events kept for a listener that does not read, before it is closed.
    static let maximumQueuedEvents = 1000

    enum Mode {
        /// Between requests (an idle connection is closed by the read timeout).
        case idle
        case reading(HTTPRequestHead, Route, body: Int)
        /// A response is on its way (a snapshot being taken).
        case busy
        /// A complete request waits for the socket to take the previous answer.
        case parked(HTTPRequestHead, Route)
        /// `/stream.mjpg`: `pending` is the newest frame the socket could not take yet.
        case stream(pending: PreviewFrame?)
        /// `/events`: lines the socket could not take yet.
        case events(queued: [ByteBuffer])
        case file(fd: Int32, offset: Int, remaining: Int, keepAlive: Bool)
        case closed
    }
    var mode = Mode.idle
    /// The request's version, answered in kind (an HTTP/1.0 client gets no chunked stream).
    private var version = HTTPVersion.http1_1
    /// The request being answered, for the debug log.
    var request = ""
    var context: ChannelHandlerContext?
    let server: ServerCore
    /// The connection's slot, deadlines and bounds.
    let connection: ConnectionGuard
    /// The loop's turn in which the last answer ended (``LoopTurns``).
    private var answeredTurn: UInt64?
    /// A request waits for the next turn.
    private var waitingForTurn = false
    /// The body of a WHEP offer being read.
    var offer: ByteBuffer?

    init(server: ServerCore, connection: ConnectionGuard) {
        self.server = server
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    private func finish() {
        if case .file(let fd, _, _, _) = mode { close(fd) }
        if case .closed = mode { return }
        mode = .closed
        server.hub.remove(self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard case .idle = mode else { return }
            version = head.version.major == 1 && head.version.minor == 0 ? .http1_0 : .http1_1
            request = "\(head.method) \(head.uri.prefix(200))"
            // Two Host headers could name two servers: which one is meant (RFC 9112 3.2)?
            if head.headers["host"].count > 1 { return fail(.badRequest, context) }
            let route = Route(method: head.method.rawValue, target: head.uri)
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > Self.bodyLimit(route) {
                return fail(.payloadTooLarge, context)
            }
            if let expect = head.headers.first(name: "expect") {
                guard expect.lowercased() == "100-continue" else { return fail(.expectationFailed, context) }
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .continue))), promise: nil)
            }
            offer = nil
            mode = .reading(head, route, body: 0)
        case .body(var part):
            guard case .reading(let head, let route, let body) = mode else { return }
            let total = body + part.readableBytes
            guard total <= Self.bodyLimit(route) else { return fail(.payloadTooLarge, context) }
            if route == .whepOffer {
                if offer == nil { offer = context.channel.allocator.buffer(capacity: part.readableBytes) }
                offer?.writeBuffer(&part)
            }
            mode = .reading(head, route, body: total)
        case .end:
            guard case .reading(let head, let route, _) = mode else { return }
            connection.requestComplete()
            mode = .parked(head, route)
            answerParked(context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIOHTTP1's parser refused the bytes: an answer if none has started, then close.
        if let parse = error as? HTTPParserError {
            switch mode {
            case .idle, .reading: fail(parse == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest, context)
            default: context.close(promise: nil)
            }
            return
        }
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        defer { if case .stream = mode { server.hub.countReadyViewers() } }
        guard context.channel.isWritable else { return }
        switch mode {
        case .parked:
            answerParked(context)
        case .stream(let pending?):
            mode = .stream(pending: nil)
            // Unless the feed left newer frames unencoded meanwhile: then it encodes the
            // newest for this viewer now (it counts as ready below).
            if !server.hub.demand.isPaused { send(pending) }
        case .events(let queued) where !queued.isEmpty:
            mode = .events(queued: [])
            for b in queued { context.write(wrapOutboundOut(.body(.byteBuffer(b))), promise: nil) }
            context.flush()
        case .file:
            pumpFile()
        default:
            break
        }
        context.fireChannelWritabilityChanged()
    }

    /// Answers the complete request that waits, when the socket takes more and this
    /// connection has not answered another in this turn of the loop (docs/live-view.md#security):
    /// a client that pipelines requests and reads nothing holds one answer beyond the write
    /// buffer, not one per request, and one that sends many in one packet gets one answer per
    /// turn, as every other connection does.
    private func answerParked(_ context: ChannelHandlerContext) {
        guard case .parked(let head, let route) = mode, context.channel.isWritable else { return }
        let turns = server.gatekeeper.turns
        guard answeredTurn != turns.turn else {
            guard !waitingForTurn else { return }
            waitingForTurn = true
            turns.afterThisTurn(on: context.eventLoop) { [self] in
                waitingForTurn = false
                if let context = self.context { answerParked(context) }
            }
            return
        }
        mode = .busy
        respond(to: head, route, context)
    }

    // MARK: - Responses

    /// Whether the request may be answered: the Host check without credentials, the
    /// credentials (and the peer's backoff after wrong ones) with them, and a slot for a
    /// connection that has shown them. Else the refusal is written, and the connection closes.
    private func admitted(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) -> Bool {
        // Without credentials (loopback only) a request must name this machine by a loopback
        // name: a page of another site rebound to 127.0.0.1 is answered with nothing.
        if server.settings.credentials == nil, !loopbackHostAllowed(head.headers.first(name: "host")) {
            reply(
                .forbidden, text: "this live view answers only localhost and 127.0.0.1 (configure credentials to serve other names)\n",
                keepAlive: false, context)
            return false
        }
        let gate = server.gatekeeper
        if let credentials = server.settings.credentials {
            let peer = connection.peer
            let now = context.eventLoop.now
            let authorization = head.headers.first(name: "authorization")
            if authorization != nil, let wait = gate.backoff.wait(peer, now: now) {
                // Guessing is slowed: not even the right password is looked at until then.
                var h = HTTPHeaders()
                h.add(name: "Retry-After", value: String((wait.nanoseconds + 999_999_999) / 1_000_000_000))
                reply(.tooManyRequests, text: "too many wrong credentials: try again later\n", headers: h, keepAlive: false, context)
                return false
            }
            guard credentials.accept(authorization: authorization) else {
                if authorization != nil {
                    let (failures, delay) = gate.backoff.failed(peer, now: now)
                    if let left = gate.credentialLog.admit(now: now.timestamp) {
                        server.hub.logger.info(
                            "live view: wrong credentials from \(peer) (\(failures) in a row; next attempt refused for \(delay.nanoseconds / 1_000_000_000) s)\(left > 0 ? "; \(left) more such lines left out" : "")",
                            metadata: ["http.client": "\(peer)"])
                    }
                }
                var h = HTTPHeaders()
                h.add(name: "WWW-Authenticate", value: "Basic realm=\"evcapture\", charset=\"UTF-8\"")
                // Closed after the answer: a client without credentials holds no slot for long.
                reply(.unauthorized, text: "credentials needed\n", headers: h, keepAlive: false, context)
                return false
            }
            gate.backoff.succeeded(peer)
        }
        guard gate.authenticate(connection) else {
            reply(.serviceUnavailable, text: "too many connections\n", keepAlive: false, context)
            return false
        }
        return true
    }

    private func respond(to head: HTTPRequestHead, _ route: Route, _ context: ChannelHandlerContext) {
        let keepAlive = head.isKeepAlive
        guard admitted(head, context) else { return }
        // HEAD: the answer's head as GET would have it; NIOHTTP1's encoder leaves out its body.
        let headOnly = head.method == .HEAD
        switch route {
        case .page:
            var h = HTTPHeaders()
            h.add(
                name: "Content-Security-Policy",
                value:
                    "default-src 'self'; img-src 'self' blob:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'"
            )
            reply(.ok, body: server.page, type: "text/html; charset=utf-8", headers: h, keepAlive: keepAlive, context)
        case .stream where headOnly, .events where headOnly:
            startStreaming(type: route == .stream ? Framing.streamContentType : "text/event-stream", context)
            end(keepAlive: false, context)
        case .stream:
            guard server.hub.hasRoom else { return reply(.serviceUnavailable, text: "too many clients\n", keepAlive: false, context) }
            startStreaming(type: Framing.streamContentType, context)
            mode = .stream(pending: nil)
            server.hub.addViewer(self)
        case .events:
            guard server.hub.hasRoom else { return reply(.serviceUnavailable, text: "too many clients\n", keepAlive: false, context) }
            startStreaming(type: "text/event-stream", context)
            var hello = context.channel.allocator.buffer(capacity: 16)
            hello.writeString(": evcapture\n\n")
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(hello))), promise: nil)
            mode = .events(queued: [])
            server.hub.addListener(self)
        case .snapshot:
            guard server.hub.hasRoom else { return reply(.serviceUnavailable, text: "too many clients\n", keepAlive: false, context) }
            server.hub.snapshot(quality: server.snapshotQuality).assumeIsolated().whenSuccess { [self] frame in
                guard case .busy = mode, let context = self.context else { return }
                guard let frame else {
                    return reply(.serviceUnavailable, text: "no frame from the camera\n", keepAlive: keepAlive, context)
                }
                var h = HTTPHeaders()
                h.add(name: "X-Timestamp", value: Framing.timestamp(frame.time))
                h.add(name: "Cross-Origin-Resource-Policy", value: "same-origin")
                reply(.ok, body: frame.jpeg, type: "image/jpeg", headers: h, keepAlive: keepAlive, context)
            }
        case .mediaList:
            reply(.ok, body: server.media.listing(), type: "application/json", keepAlive: keepAlive, context)
        case .media(let name):
            guard let (fd, bytes) = server.media.open(name) else {
                return reply(.notFound, text: "no such file\n", keepAlive: keepAlive, context)
            }
            var h = HTTPHeaders()
            h.add(name: "Accept-Ranges", value: "bytes")
            let range = ByteRange(header: head.headers.first(name: "range"), ifRange: head.headers.first(name: "if-range"), size: bytes)
            var status = HTTPResponseStatus.ok
            var offset = 0
            var length = bytes
            switch range {
            case .whole:
                break
            case .part(let first, let last):
                status = .partialContent
                offset = first
                length = last - first + 1
                h.add(name: "Content-Range", value: "bytes \(first)-\(last)/\(bytes)")
            case .unsatisfiable:
                close(fd)
                h.add(name: "Content-Range", value: "bytes */\(bytes)")
                return reply(.rangeNotSatisfiable, text: "range not satisfiable\n", headers: h, keepAlive: keepAlive, context)
            }
            server.hub.logger.debug(
                "live view: \(request): \(status.code)", metadata: ["http.client": "\(context.remoteAddress.map { "\($0)" } ?? "")"])
            h.add(name: "Content-Type", value: MediaDirectory.contentType(of: name))
            h.add(name: "Content-Length", value: String(length))
            h.add(name: "Content-Disposition", value: MediaDirectory.contentDisposition(name))
            h.add(name: "Cross-Origin-Resource-Policy", value: "same-origin")
            Self.addSecurityHeaders(&h)
            if !keepAlive { h.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: h))), promise: nil)
            mode = .file(fd: fd, offset: offset, remaining: headOnly ? 0 : length, keepAlive: keepAlive)
            pumpFile()
        case .input(let input):
            guard sameOrigin(head, keepAlive: keepAlive, context), withinRate(keepAlive: keepAlive, context) else { return }
            server.input(input)
            reply(.accepted, text: Self.accepted, type: "application/json", keepAlive: keepAlive, context)
        case .whepOffer, .whepEnd:
            respondWHEP(to: head, route, keepAlive: keepAlive, context)
        case .methodNotAllowed(let allow):
            var h = HTTPHeaders()
            h.add(name: "Allow", value: allow)
            reply(.methodNotAllowed, text: "use \(allow)\n", headers: h, keepAlive: keepAlive, context)
        case .badRequest(let why):
            reply(.badRequest, text: why + "\n", keepAlive: false, context)
        case .notFound:
            reply(.notFound, text: "not found\n", keepAlive: keepAlive, context)
        }
    }

    static func bodyLimit(_ route: Route) -> Int { route == .whepOffer ? maximumOffer : maximumBody }

    private func startStreaming(type: String, _ context: ChannelHandlerContext) {
        server.hub.logger.debug(
            "live view: \(request): 200, streaming", metadata: ["http.client": "\(context.remoteAddress.map { "\($0)" } ?? "")"])
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: type)
        h.add(name: "Cache-Control", value: "no-cache, no-store")
        h.add(name: "Connection", value: "close")
        if type == Framing.streamContentType { h.add(name: "Cross-Origin-Resource-Policy", value: "same-origin") }
        Self.addSecurityHeaders(&h)
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .ok, headers: h))), promise: nil)
    }

    func reply(
        _ status: HTTPResponseStatus, text: String, type: String = "text/plain; charset=utf-8", headers: HTTPHeaders = [:],
        keepAlive: Bool, _ context: ChannelHandlerContext
    ) {
        reply(status, body: ByteBuffer(string: text), type: type, headers: headers, keepAlive: keepAlive, context)
    }

    func reply(
        _ status: HTTPResponseStatus, body: ByteBuffer, type: String, headers: HTTPHeaders = [:], keepAlive: Bool,
        _ context: ChannelHandlerContext
    ) {
        server.hub.logger.debug(
            "live view: \(request): \(status.code)", metadata: ["http.client": "\(context.remoteAddress.map { "\($0)" } ?? "")"])
        var h = headers
        h.add(name: "Content-Type", value: type)
        h.add(name: "Content-Length", value: String(body.readableBytes))
        h.add(name: "Cache-Control", value: "no-store")
        Self.addSecurityHeaders(&h)
        if !keepAlive { h.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: h))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        end(keepAlive: keepAlive, context)
    }

    private func end(keepAlive: Bool, _ context: ChannelHandlerContext) {
        // Before the end is written: writing it may hand over the next pipelined request at once.
        mode = keepAlive ? .idle : .busy
        answeredTurn = server.gatekeeper.turns.turn
        connection.responseEnded()
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// On every answer: no framing by another site's page (the page's buttons take photos),
    /// no guessing of types (docs/live-view.md#security).
    static func addSecurityHeaders(_ h: inout HTTPHeaders) {
        if let csp = h.first(name: "Content-Security-Policy") {
            if !csp.contains("frame-ancestors") {
                h.replaceOrAdd(name: "Content-Security-Policy", value: csp + "; frame-ancestors 'none'")
            }
        } else {
            h.add(name: "Content-Security-Policy", value: "frame-ancestors 'none'")
        }
        h.add(name: "X-Frame-Options", value: "DENY")
        h.add(name: "X-Content-Type-Options", value: "nosniff")
    }

    /// An error answer before any other, then the connection closes.
    private func fail(_ status: HTTPResponseStatus, _ context: ChannelHandlerContext) {
        reply(status, text: "\(status.reasonPhrase)\n", keepAlive: false, context)
    }

    /// Writes the file's next chunks while the socket takes them.
    private func pumpFile() {
        guard let context else { return }
        while case .file(let fd, let offset, let remaining, let keepAlive) = mode {
            if remaining == 0 {
                close(fd)
                return end(keepAlive: keepAlive, context)
            }
            guard context.channel.isWritable else { return context.flush() }
            var chunk = context.channel.allocator.buffer(capacity: min(Self.fileChunk, remaining))
            let n = chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: min(Self.fileChunk, remaining)) { b in
                max(0, pread(fd, b.baseAddress, min(b.count, remaining), off_t(offset)))
            }
            guard n > 0 else {
                // The file shrank under us: the length promised cannot be kept.
                close(fd)
                mode = .closed
                context.close(promise: nil)
                return
            }
            mode = .file(fd: fd, offset: offset + n, remaining: remaining - n, keepAlive: keepAlive)
            context.write(wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil)
        }
        context.flush()
    }
}
