#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import LinuxIO
import Synchronization

extension MQTTClient {
    /// What the daemon reports about the connection.
    public enum Event: Sendable, Hashable {
        /// The broker accepted the connection (the birth message is published, the offline
        /// queue is being sent); `dropped`: messages lost to the queue limit while offline.
        case connected(dropped: Int)
        /// A connection attempt failed (unreachable, TLS, refused by the broker); retried
        /// after `retry`.
        case connectFailed(reason: String, retry: Duration)
        /// An established connection was lost; reconnecting.
        case disconnected(reason: String)
    }
}

/// One connection attempt's first step — `mosquitto_connect_async` or
/// `mosquitto_reconnect_async` — on a short-lived thread of its own, so that the daemon's
/// loop never waits for it: that call resolves the broker's host name (getaddrinfo, which
/// blocks for as long as the resolver takes: seconds when a DNS server does not answer)
/// before it starts the non-blocking TCP connect (and, for `mqtts://`, the TLS handshake).
///
/// The host name goes to libmosquitto unchanged, so the TLS certificate is still checked
/// against it. While the step runs the loop does not touch the libmosquitto client at all
/// (the client is in its `resolving` phase: no socket watched, no timer work), so
/// libmosquitto is still used by one thread at a time; the thread's end is handed to the
/// loop through the client's eventfd, and the lock below orders the two threads' work.
final class MosquittoConnectStep: Sendable {
    /// What the step returned: libmosquitto's code, the reason of a failure (errno is read
    /// on the thread that saw it), and whether it was the first call (which stores host,
    /// port and keepalive for the later ones).
    struct Outcome: Sendable {
        var rc: Int32
        var reason: String?
        var first: Bool
        /// The errno the call left when it says why a connection failed (``connectionErrno(_:)``),
        /// else 0: libmosquitto 2.0.11's TLS connect may take the socket's error and go on.
        var connectionError: Int32
    }

    private struct State {
        var running = false
        /// The client stopped while the step ran: the thread destroys the libmosquitto client.
        var abandoned = false
        var outcome: Outcome?
    }
    private let state = Mutex(State())

    /// Starts the step for `handle`; `wake` (an eventfd on the loop) is written when it ends,
    /// unless the client was abandoned by then.
    /// `owner` (the client, libmosquitto's user data) is kept alive until the thread ends:
    /// an abandoned step's log callback may still reach it.
    func start(_ handle: MosquittoHandle, first: Bool, broker: MQTTBroker, keepalive: Int, wake: Int32, owner: AnyObject & Sendable) {
        state.withLock {
            precondition(!$0.running, "one connection step at a time")
            $0.running = true
            $0.outcome = nil
        }
        startThread(name: "evc-mqtt-connect") { [self, owner] in
            defer { withExtendedLifetime(owner) {} }
            let rc =
                first
                ? mosquitto_connect_async(handle.pointer, broker.host, Int32(broker.port), Int32(keepalive))
                : mosquitto_reconnect_async(handle.pointer)
            let connectionError = connectionErrno(errno)
            let reason = rc == MOSQ_ERR_SUCCESS.rawValue || rc == MOSQ_ERR_CONN_PENDING.rawValue ? nil : describeMosquitto(rc)
            let abandoned = state.withLock { s -> Bool in
                s.running = false
                guard !s.abandoned else { return true }
                s.outcome = Outcome(rc: rc, reason: reason, first: first, connectionError: connectionError)
                // Under the lock: abandon() (before the client closes the eventfd) cannot
                // come between the check and this write.
                var one: UInt64 = 1
                _ = withUnsafeBytes(of: &one) { write(wake, $0.baseAddress, 8) }
                return false
            }
            if abandoned { mosquitto_destroy(handle.pointer) }
        }
    }

    /// The step's outcome, once (nil while it runs or when there is none).
    func take() -> Outcome? {
        state.withLock { s in
            defer { s.outcome = nil }
            return s.outcome
        }
    }

    /// The client stops: true when a step is still running (its thread then destroys the
    /// libmosquitto client when the call returns; the caller must not).
    func abandon() -> Bool {
        state.withLock { s in
            s.abandoned = true
            return s.running
        }
    }
}

/// The client's options: MQTT 3.1.1, TCP_NODELAY, the last will, the credentials, and for
/// `mqtts://` TLS verified against the CA file (or the system's store) with the host name
/// checked (insecure = false).
func configureMosquitto(_ m: OpaquePointer, _ settings: MQTTConnectionSettings, password: String?) throws(MQTTClientError) {
    try check(mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V311)), "protocol version")
    try check(mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
    if let will = settings.will {
        let rc = will.payload.withUnsafeBytes {
            mosquitto_will_set(m, will.topic, Int32($0.count), $0.baseAddress, will.qos.rawValue, will.retain)
        }
        try check(rc, "last will on \(will.topic)")
    }
    if let username = settings.username {
        try check(mosquitto_username_pw_set(m, username, password), "username")
    }
    if settings.broker.tls {
        if let ca = settings.caFile {
            try check(mosquitto_tls_set(m, ca, nil, nil, nil, nil), "TLS with CA file \(ca)")
        } else {
            try check(mosquitto_int_option(m, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "TLS with the system's CA store")
            // libmosquitto 2.0.11 (Debian 12) builds its TLS context on the first connect and
            // with the default "SSL_CTX with defaults" refuses every later connect that has
            // no CA file ("invalid function arguments"): without it the later connects reuse
            // that context (system store, host name check) as they are. From 2.0.12 the
            // option only concerns a caller's own context, which is never set here.
            try check(mosquitto_int_option(m, MOSQ_OPT_SSL_CTX_WITH_DEFAULTS, 0), "TLS context reuse")
        }
        try check(mosquitto_tls_insecure_set(m, false), "TLS host name verification")
    }
}

private func check(_ rc: Int32, _ what: String) throws(MQTTClientError) {
    guard rc == MOSQ_ERR_SUCCESS.rawValue else {
        throw MQTTClientError("MQTT \(what): \(describeMosquitto(rc))")
    }
}

/// The libmosquitto client. Sendable so that the connection step's thread and the actor's
/// deinit may use it: every use is either on the loop thread, or on the step's thread while
/// the loop leaves it alone (``MosquittoConnectStep``), or in a deinit when nothing else can
/// reach it.
struct MosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A failure of the MQTT client's set-up (credentials, TLS, descriptors).
public struct MQTTClientError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// libmosquitto's code as text (errno's, for MOSQ_ERR_ERRNO: call it on the thread that saw it).
func describeMosquitto(_ rc: Int32) -> String {
    if rc == MOSQ_ERR_ERRNO.rawValue { return SystemError(errno: errno).reason }
    return String(cString: mosquitto_strerror(rc)).lowercased()
}

/// `e` when it says why a TCP connection failed or ended (refused, reset, unreachable,
/// timed out), else 0.
func connectionErrno(_ e: Int32) -> Int32 {
    [ECONNREFUSED, ECONNRESET, ECONNABORTED, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, EPIPE].contains(e) ? e : 0
}

/// OpenSSL's reason in a libmosquitto error line: "OpenSSL Error[0]:
/// error:0A000086:SSL routines::certificate verify failed" → "certificate verify failed".
func openSSLReason(_ line: String) -> String? {
    guard line.hasPrefix("OpenSSL Error"), let colon = line.lastIndex(of: ":") else { return nil }
    let reason = line[line.index(after: colon)...].drop { $0 == " " }
    return reason.isEmpty ? nil : String(reason)
}

/// `mosquitto_lib_init`, once per process (it is not thread-safe; a global's initialiser
/// runs exactly once).
let mosquittoLibrary: Void = { _ = mosquitto_lib_init() }()

extension Duration {
    var microseconds: Int64 {
        let (s, atto) = components
        return s * 1_000_000 + atto / 1_000_000_000_000
    }
}
