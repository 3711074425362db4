import NIOCore
import NIOHTTP1

/// The requests that change something (a button, a knob, a WHEP offer or its end): the
/// Origin check and the rate they share (docs/live-view.md#security), and WHEP's answer.
extension HTTPConnection {
    /// A changing request (a button, a knob, a WHEP offer or its end) must come from a page
    /// of this server (docs/live-view.md#security); else 403 is written and false returned.
    func sameOrigin(_ head: HTTPRequestHead, keepAlive: Bool, _ context: ChannelHandlerContext) -> Bool {
        guard originAllowed(origin: head.headers.first(name: "origin"), host: head.headers.first(name: "host")) else {
            reply(.forbidden, text: "Origin does not match Host\n", keepAlive: keepAlive, context)
            return false
        }
        return true
    }

    /// The rate of changing requests, all clients together; past it 429 is written (and
    /// logged at a bounded rate) and false returned.
    func withinRate(keepAlive: Bool, _ context: ChannelHandlerContext) -> Bool {
        let gate = server.gatekeeper
        let now = context.eventLoop.now
        guard gate.inputs.take(now: now) else {
            if let left = gate.inputLog.admit(now: now.timestamp) {
                server.hub.logger.info(
                    "live view: too many requests to act, \(request) refused (429)\(left > 0 ? "; \(left) more left out" : "")",
                    metadata: ["http.client": "\(connection.peer)"])
            }
            var h = HTTPHeaders()
            h.add(name: "Retry-After", value: "1")
            reply(.tooManyRequests, text: "too many requests: try again in a second\n", headers: h, keepAlive: keepAlive, context)
            return false
        }
        return true
    }

    /// WHEP (RFC 9725, docs/live-view.md#webrtc): an offer answered with 201, the answer's
    /// SDP and the session's `Location`; a session ended with `DELETE`. Changing requests:
    /// the same Origin check and rate as the buttons'.
    func respondWHEP(to head: HTTPRequestHead, _ route: Route, keepAlive: Bool, _ context: ChannelHandlerContext) {
        guard sameOrigin(head, keepAlive: keepAlive, context) else { return }
        guard let whep = server.whep else { return reply(.notFound, text: "WebRTC is off\n", keepAlive: keepAlive, context) }
        if case .whepEnd(let id) = route {
            return whep.end(session: id)
                ? reply(.ok, text: "", keepAlive: keepAlive, context)
                : reply(.notFound, text: "no such session\n", keepAlive: keepAlive, context)
        }
        let type = head.headers.first(name: "content-type")?.split(separator: ";").first?.trimmingSpaces.lowercased()
        guard type == "application/sdp" else {
            return reply(.unsupportedMediaType, text: "an offer is application/sdp\n", keepAlive: keepAlive, context)
        }
        guard withinRate(keepAlive: keepAlive, context) else { return }
        let sdp = offer.map { String(buffer: $0) } ?? ""
        offer = nil
        let answered = context.eventLoop.makePromise(of: Result<WHEPAnswer, WHEPError>.self)
        whep.answer(offer: sdp) { answered.succeed($0) }
        answered.futureResult.assumeIsolated().whenSuccess { [self] result in
            guard case .busy = mode, let context = self.context else {
                // The viewer went away before its answer: its session ends unanswered.
                if case .success(let answer) = result { _ = whep.end(session: answer.session) }
                return
            }
            switch result {
            case .success(let answer):
                var h = HTTPHeaders()
                h.add(name: "Location", value: Route.whepPrefix + answer.session)
                reply(.created, body: ByteBuffer(string: answer.sdp), type: "application/sdp", headers: h, keepAlive: keepAlive, context)
            case .failure(let error):
                server.hub.logger.info("live view: WebRTC offer refused: \(error)", metadata: ["http.client": "\(connection.peer)"])
                reply(
                    error.code == .badOffer ? .badRequest : .serviceUnavailable, text: error.message + "\n", keepAlive: keepAlive,
                    context)
            }
        }
    }
}
