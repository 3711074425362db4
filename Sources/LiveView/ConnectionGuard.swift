import Vocabulary
import LinuxIO
import NIOCore
import NIOHTTP1

/// The server's connection slots, with and without credentials, and what it remembers of
/// each peer (wrong credentials, the rate of changing requests), all by
/// ``ConnectionPolicy``.
///
/// `@unchecked Sendable`: as ``Hub``, every stored `var` is read and written on `loop` only
/// (the connection handlers run there and nothing else touches them).
final class Gatekeeper: @unchecked Sendable {
    let loop: any EventLoop
    let policy: ConnectionPolicy
    /// The loop's turns: a connection answers one pipelined request per turn.
    let turns: LoopTurns
    private var unauthenticated: [ObjectIdentifier: ConnectionGuard] = [:]
    private var unauthenticatedPerPeer: [String: Int] = [:]
    private var authenticated = 0
    /// Admissions so far: the order of connections opened in the same clock tick.
    private var admitted = 0
    var backoff: FailureBackoff
    var inputs: RateLimit
    var credentialLog: LogThrottle
    var inputLog: LogThrottle

    init(loop: any EventLoop, policy: ConnectionPolicy, turns: LoopTurns) {
        self.loop = loop
        self.policy = policy
        self.turns = turns
        backoff = FailureBackoff(policy: policy)
        inputs = RateLimit(burst: policy.inputBurst, perSecond: policy.inputsPerSecond)
        credentialLog = LogThrottle(interval: policy.logInterval.duration)
        inputLog = LogThrottle(interval: policy.logInterval.duration)
    }

    /// Connections open now (for tests and the log).
    var open: (unauthenticated: Int, authenticated: Int) {
        loop.preconditionInEventLoop()
        return (unauthenticated.count, authenticated)
    }

    /// A new connection takes an unauthenticated slot, always: to make room, it closes the
    /// oldest unauthenticated connection of its own peer when that peer holds its share (or
    /// holds most when all are taken), else, when all are taken, the oldest of the peer
    /// holding most. So a client that opens many only ever displaces its own, and cannot keep
    /// out one that opens a few.
    func admit(_ c: ConnectionGuard) {
        loop.preconditionInEventLoop()
        let mine = unauthenticatedPerPeer[c.peer, default: 0]
        let full = unauthenticated.count >= policy.unauthenticatedTotal
        let greedy = unauthenticatedPerPeer.max(by: { $0.value < $1.value })
        var displaced: String?
        if mine >= policy.unauthenticatedPerPeer || (full && mine >= (greedy?.value ?? 0)) {
            displaced = c.peer
        } else if full {
            displaced = greedy?.key
        }
        if let displaced, let oldest = unauthenticated.values.filter({ $0.peer == displaced }).min(by: { $0.opened < $1.opened }) {
            leave(oldest)
            oldest.evict()
        }
        admitted += 1
        c.opened = admitted
        unauthenticated[ObjectIdentifier(c)] = c
        unauthenticatedPerPeer[c.peer, default: 0] += 1
        c.slot = .unauthenticated
    }

    /// The connection made a request with valid credentials: it moves to an authenticated
    /// slot; false when all are taken (it gets 503 and is closed).
    func authenticate(_ c: ConnectionGuard) -> Bool {
        loop.preconditionInEventLoop()
        if case .authenticated = c.slot { return true }
        guard authenticated < policy.authenticatedTotal else { return false }
        leave(c)
        authenticated += 1
        c.slot = .authenticated
        return true
    }

    /// The connection closed (whatever its slot).
    func release(_ c: ConnectionGuard) {
        loop.preconditionInEventLoop()
        guard c.slot != .free else { return }
        leave(c)
        if unauthenticated.isEmpty, authenticated == 0 {
            // The last client left: what glibc's arenas keep of their buffers goes back to
            // the kernel, so the daemon's memory returns to what it was before them.
            returnFreedMemory()
        }
    }

    private func leave(_ c: ConnectionGuard) {
        switch c.slot {
        case .free: break
        case .unauthenticated:
            unauthenticated[ObjectIdentifier(c)] = nil
            let n = unauthenticatedPerPeer[c.peer, default: 1] - 1
            unauthenticatedPerPeer[c.peer] = n > 0 ? n : nil
        case .authenticated:
            authenticated -= 1
        }
        c.slot = .free
    }
}

/// The first handler of every connection (before TLS, so it sees the bytes on the wire):
/// it holds the connection's slot (``Gatekeeper``), its deadlines (idle, request, progress)
/// and its bounds (bytes waiting for the socket, requests not yet answered), and stops
/// reading while the socket takes nothing more. Loop-bound, as every handler.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    enum Slot { case free, unauthenticated, authenticated }
    var slot = Slot.free
    /// The peer's IP address (no port): what the per-peer limits count.
    private(set) var peer = "unknown"
    /// When it was admitted, in order (``Gatekeeper``).
    fileprivate(set) var opened = 0

    private enum Phase {
        /// Between requests: the next byte must come within the idle timeout.
        case idle
        /// A request's first byte has come; it must be complete by the request deadline.
        case request
        /// A response is under way: only the progress deadline applies.
        case responding
    }
    private var phase = Phase.idle
    /// Bytes came while a response was under way (the start of a pipelined request).
    private var bytesDuringResponse = false
    /// Requests whose head came and whose response has not ended.
    private var queuedRequests = 0
    /// Bytes written and not yet taken by the socket.
    private var outboundBytes = 0
    private var lastProgress = NIODeadline.uptimeNanoseconds(0)
    private var deadline: Scheduled<Void>?
    private var progressCheck: Scheduled<Void>?
    private var readPending = false
    private var context: ChannelHandlerContext?
    let gatekeeper: Gatekeeper
    var policy: ConnectionPolicy { gatekeeper.policy }

    init(gatekeeper: Gatekeeper) { self.gatekeeper = gatekeeper }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    private var started = false

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        peer = context.channel.remoteAddress?.ipAddress ?? "unknown"
        gatekeeper.admit(self)
        enter(.idle)
    }

    private func stop() {
        gatekeeper.release(self)
        deadline?.cancel()
        deadline = nil
        progressCheck?.cancel()
        progressCheck = nil
    }

    /// Closed to make room for a newcomer (``Gatekeeper/admit(_:)``).
    func evict() {
        context?.close(promise: nil)
    }

    // MARK: - Deadlines

    private func enter(_ next: Phase) {
        phase = next
        deadline?.cancel()
        deadline = nil
        guard let context else { return }
        let limit: TimeAmount
        switch next {
        case .idle: limit = policy.idleTimeout
        case .request: limit = policy.requestDeadline
        case .responding: return
        }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: limit) { [self] in
            // The last answer is still on its way to a slow reader: the progress deadline
            // decides about that; the idle time counts from when it is all taken.
            if case .idle = phase, outboundBytes > 0 { return enter(.idle) }
            // A request never finished in time, or nothing came: the slot is given back.
            self.context?.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch phase {
        case .idle: enter(.request)
        case .request: break
        case .responding: bytesDuringResponse = true
        }
        context.fireChannelRead(data)
    }

    /// A request's head came (it is queued until answered); false: too many are queued and
    /// the connection is closing.
    func requestArrived() -> Bool {
        queuedRequests += 1
        guard queuedRequests <= policy.maximumQueuedRequests else {
            context?.close(promise: nil)
            return false
        }
        return true
    }

    /// A request is complete (head and body): its deadline is met.
    func requestComplete() {
        enter(.responding)
    }

    /// A response ended (called before its end is written, which may hand over the next
    /// pipelined request at once). A request already begun has its deadline from now.
    func responseEnded() {
        queuedRequests = max(0, queuedRequests - 1)
        let begun = bytesDuringResponse || queuedRequests > 0
        bytesDuringResponse = false
        enter(begun ? .request : .idle)
    }

    // MARK: - Backpressure and progress

    func read(context: ChannelHandlerContext) {
        // A client that does not read gets nothing read from it either: its requests stay in
        // the kernel's buffers (and then its own) until it takes what was written.
        guard context.channel.isWritable else {
            readPending = true
            return
        }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, readPending {
            readPending = false
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let bytes = unwrapOutboundIn(data).readableBytes
        guard outboundBytes + bytes <= policy.maximumOutboundBytes else {
            promise?.fail(ChannelError.outputClosed)
            context.close(promise: nil)
            return
        }
        if outboundBytes == 0 {
            lastProgress = context.eventLoop.now
            armProgressCheck(context.eventLoop)
        }
        outboundBytes += bytes
        let written = promise ?? context.eventLoop.makePromise()
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            outboundBytes -= bytes
            lastProgress = self.context?.eventLoop.now ?? lastProgress
        }
        context.write(data, promise: written)
    }

    /// Closes the connection when bytes have waited for the socket for the progress
    /// deadline without any being taken.
    private func armProgressCheck(_ loop: any EventLoop) {
        guard progressCheck == nil else { return }
        progressCheck = loop.assumeIsolated().scheduleTask(deadline: lastProgress + policy.progressDeadline) { [self] in
            progressCheck = nil
            guard outboundBytes > 0, let context else { return }
            if context.eventLoop.now - lastProgress >= policy.progressDeadline {
                context.close(promise: nil)
            } else {
                armProgressCheck(context.eventLoop)
            }
        }
    }
}

/// Between NIOHTTP1's decoder and its pipelining handler: counts each request as its head
/// is parsed, so pipelined requests are bounded before they are queued
/// (``ConnectionPolicy/maximumQueuedRequests``).
final class RequestCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    let connection: ConnectionGuard
    init(_ connection: ConnectionGuard) { self.connection = connection }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data), !connection.requestArrived() { return }
        context.fireChannelRead(data)
    }
}
