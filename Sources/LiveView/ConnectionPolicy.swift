import Vocabulary
import NIOCore

/// What one client may hold of the live view, in one place for every route
/// (docs/live-view.md#security): the deadlines, the bytes and requests a connection may have
/// outstanding, the connection slots with and without credentials, the backoff after wrong
/// credentials and the rate of changing requests. A new route takes its limits from here.
public struct ConnectionPolicy: Sendable, Hashable {
    /// A connection with nothing in progress is closed after this long without a byte.
    public var idleTimeout = TimeAmount.seconds(10)
    /// A request (its head and body) must be complete this long after its first byte
    /// (the TLS handshake's first byte on an HTTPS connection's first request).
    var requestDeadline = TimeAmount.seconds(10)
    /// A response the client takes no byte of for this long is abandoned (the connection is
    /// closed): downloads, snapshots, the stream, events.
    var progressDeadline = TimeAmount.seconds(20)
    /// Above `high` bytes waiting for the socket the connection produces nothing more and
    /// reads no more requests, until the client has taken all but `low`.
    var writeBufferLow = 64 * 1024
    var writeBufferHigh = 256 * 1024
    /// The kernel's buffers per connection (`SO_SNDBUF`, `SO_RCVBUF`; the kernel doubles
    /// them): what a client that reads nothing makes the server answer, and what it can make
    /// the kernel hold of requests sent ahead, before the server stops.
    var socketSendBuffer = 128 * 1024
    var socketReceiveBuffer = 64 * 1024
    /// Bytes waiting for the socket beyond which a connection is closed (writes stop at
    /// `writeBufferHigh`; this bounds what one response may add above it).
    var maximumOutboundBytes = 1024 * 1024
    /// Requests received and not yet answered (pipelined) beyond which a connection is closed.
    var maximumQueuedRequests = 16
    /// Connections that have not yet made a request with valid credentials (every connection
    /// until its first request is answered, without credentials configured): per peer
    /// address, and in all. A newcomer is always let in: it closes the oldest such connection
    /// of its own peer when that peer holds its share, else (all taken) the oldest of the peer
    /// holding most. A request without valid credentials is answered (401) and its
    /// connection closed.
    var unauthenticatedPerPeer = 4
    var unauthenticatedTotal = 16
    /// Connections that have made a request with valid credentials.
    var authenticatedTotal = 24
    /// Wrong credentials: this many from one peer are answered at once; after each further
    /// one the peer's next attempt is refused (429, `Retry-After`) for a delay that doubles
    /// from `firstBackoff` up to `maximumBackoff`. A success clears the peer's count.
    var freeFailures = 3
    var firstBackoff = TimeAmount.seconds(1)
    public var maximumBackoff = TimeAmount.seconds(60)
    /// Peers whose failures are remembered (the oldest are forgotten first).
    var rememberedPeers = 1024
    /// Changing requests (`POST /api/…`), all clients together: a burst of `inputBurst`, then
    /// `inputsPerSecond`; more get 429.
    var inputBurst = 10
    var inputsPerSecond = 5
    /// One log line of a kind (wrong credentials, refused inputs) per this interval; the
    /// next one says how many were left out.
    var logInterval = TimeAmount.seconds(10)

    public init() {}

    /// The defaults, with the authenticated slots scaled to `maxClients` streams.
    public init(maxClients: Int) {
        authenticatedTotal = maxClients * 4 + 8
    }
}

/// A token bucket on the event loop's clock: `burst` at once, refilled at `perSecond`.
struct RateLimit {
    let burst: Int
    let perSecond: Int
    private var tokens: Double
    private var last: NIODeadline?

    init(burst: Int, perSecond: Int) {
        self.burst = max(1, burst)
        self.perSecond = max(1, perSecond)
        tokens = Double(self.burst)
    }

    /// Takes a token; false when there is none now.
    mutating func take(now: NIODeadline) -> Bool {
        if let last {
            let elapsed = Double((now - last).nanoseconds) / 1e9
            tokens = min(Double(burst), tokens + max(0, elapsed) * Double(perSecond))
        }
        last = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

extension NIODeadline {
    /// The loop's clock as a ``Timestamp`` (for ``LogThrottle``).
    var timestamp: Timestamp { Timestamp(microseconds: Int64(uptimeNanoseconds / 1000)) }
}

extension TimeAmount {
    var duration: Duration { .nanoseconds(nanoseconds) }
}

/// Wrong credentials per peer address, and the backoff they earn
/// (``ConnectionPolicy/freeFailures`` and after). Loop-bound (in ``Gatekeeper``).
struct FailureBackoff {
    let policy: ConnectionPolicy
    private struct Record {
        var failures: Int
        var refusedUntil: NIODeadline
        var last: NIODeadline
    }
    private var peers: [String: Record] = [:]

    init(policy: ConnectionPolicy) { self.policy = policy }

    /// How long `peer` must still wait before its credentials are looked at; nil: now.
    func wait(_ peer: String, now: NIODeadline) -> TimeAmount? {
        guard let r = peers[peer], r.refusedUntil > now else { return nil }
        return r.refusedUntil - now
    }

    /// One more wrong attempt; returns the failures so far and the delay it earned.
    mutating func failed(_ peer: String, now: NIODeadline) -> (failures: Int, delay: TimeAmount) {
        if peers[peer] == nil, peers.count >= policy.rememberedPeers,
            let oldest = peers.min(by: { $0.value.last < $1.value.last })?.key
        {
            peers[oldest] = nil
        }
        var r = peers[peer] ?? Record(failures: 0, refusedUntil: now, last: now)
        r.failures += 1
        r.last = now
        let over = r.failures - policy.freeFailures
        var delay = TimeAmount.zero
        if over > 0 {
            // first, 2×, 4×, … up to the maximum (the shift stops before it could overflow)
            let factor = Int64(1) << Int64(min(over - 1, 20))
            delay = .nanoseconds(min(policy.firstBackoff.nanoseconds * factor, policy.maximumBackoff.nanoseconds))
        }
        r.refusedUntil = now + delay
        peers[peer] = r
        return (r.failures, delay)
    }

    mutating func succeeded(_ peer: String) { peers[peer] = nil }
}
