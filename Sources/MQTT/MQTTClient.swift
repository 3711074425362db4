#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import CMosquitto
import LinuxIO
import Logging
import Synchronization
import Vocabulary

/// An MQTT client (libmosquitto) driven by the daemon's own ``IOLoop``: no network thread
/// (never `mosquitto_loop_start`), no polling.
///
/// - Each connection attempt begins on a short-lived thread (``MosquittoConnectStep``):
///   libmosquitto resolves the broker's name inside its connect call, and a slow resolver
///   must not stall the loop's buttons and camera.
/// - The broker socket is in the loop's epoll set: readable → `mosquitto_loop_read`;
///   writable (asked for only while libmosquitto has output queued, `mosquitto_want_write`)
///   → `mosquitto_loop_write`. One ``IOTimer`` runs `mosquitto_loop_misc` for keepalive
///   pings while connected (every keepalive/4 — an idle station wakes for MQTT only then),
///   and while disconnected fires the next reconnect attempt (backoff) or gives up a
///   connection attempt that hangs.
/// - ``publish(_:)`` may be called from any thread: it queues the message (bounded; the
///   oldest are dropped while offline) and wakes the loop through an eventfd (on the loop
///   thread it hands them over at once); the loop hands queued messages to libmosquitto
///   only while connected, so they survive an outage.
/// - Every other libmosquitto call and callback happens on the loop thread (this actor's
///   executor): libmosquitto is used by one thread at a time, as its non-threaded API expects.
public actor MQTTClient {
    public nonisolated let unownedExecutor: UnownedSerialExecutor
    public nonisolated let settings: MQTTConnectionSettings
    let loop: IOLoop
    let logger: Logger
    private let onMessage: @Sendable (String, [UInt8]) -> Void
    private let onEvent: @Sendable (Event) -> Void

    /// `resolving`: a connection step runs on its own thread (``MosquittoConnectStep``) and
    /// the loop leaves libmosquitto alone; `connecting`: the TCP/TLS connect and the CONNACK
    /// are awaited on the loop.
    enum Phase { case idle, resolving, connecting, connected, waiting, stopped }
    var phase = Phase.idle
    private(set) var handle: MosquittoHandle?
    var mosq: OpaquePointer? { handle?.pointer }
    private var backoff: Backoff
    private var timer: IOTimer?
    /// The broker socket as the loop watches it: a duplicate of libmosquitto's descriptor,
    /// owned here. A duplicate so that this registration is ours to remove: libmosquitto
    /// closes its descriptor inside its own calls, and a number it closed may already name
    /// another file (even another watched one) by the time this client sees the change.
    var watched: (token: IOToken, fd: Int32, interest: Readiness)?
    /// Set by libmosquitto's connect/disconnect callbacks and our own connect calls: its
    /// socket may have been replaced, so the watched duplicate must be renewed.
    var socketReplaced = false
    /// The reason of the last failure reported, so a broker that stays away is reported once.
    private var lastFailure: String?
    /// OpenSSL's reasons for a failed TLS handshake, as libmosquitto logs them (its return
    /// code only says "a TLS error occurred"); cleared when an attempt begins. Behind a lock:
    /// its log callback runs on whichever thread made the libmosquitto call.
    private nonisolated let tlsErrors = Mutex<[String]>([])

    private struct Outbox {
        var messages: [MQTTMessage] = []
        var dropped = 0
        var wakePending = false
    }
    private nonisolated let outbox = Mutex(Outbox())
    /// Wakes the loop when ``publish(_:)`` queued something (an eventfd on the loop).
    private nonisolated let wakeFD: Int32
    private var wakeToken: IOToken?
    private let password: String?
    private let connectStep = MosquittoConnectStep()

    /// Prepares a client; nothing is connected until ``start()``. Reads the password file
    /// now, so a missing or unreadable one stops the daemon before it starts.
    public init(
        settings: MQTTConnectionSettings, loop: IOLoop, logger: Logger,
        onMessage: @escaping @Sendable (_ topic: String, _ payload: [UInt8]) -> Void,
        onEvent: @escaping @Sendable (Event) -> Void
    ) throws(MQTTClientError) {
        unownedExecutor = loop.asUnownedSerialExecutor()
        self.settings = settings
        self.loop = loop
        self.logger = logger
        self.onMessage = onMessage
        self.onEvent = onEvent
        backoff = Backoff(initial: settings.initialBackoff, maximum: settings.maximumBackoff)
        if let file = settings.passwordFile {
            do {
                let text = try readWholeFile(file)
                password = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
            } catch {
                throw MQTTClientError("cannot read the password file \(file): \(error)")
            }
        } else {
            password = nil
        }
        if let ca = settings.caFile, access(ca, R_OK) != 0 {
            throw MQTTClientError("cannot read the CA file \(ca): \(SystemError(errno: errno))")
        }
        let fd = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard fd >= 0 else { throw MQTTClientError("eventfd: \(SystemError(errno: errno))") }
        wakeFD = fd
        _ = mosquittoLibrary
    }

    deinit {
        if let handle { mosquitto_destroy(handle.pointer) }
        if let watched { close(watched.fd) }
        if wakeToken == nil { close(wakeFD) }
    }

    // MARK: - Any thread

    /// Queues a message; returns at once. While offline at most `offlineQueueLimit` wait
    /// (the oldest go first); they are sent after the next connection's birth message.
    /// Called on the loop thread (a station's press fanned out to the rig), it is handed to
    /// libmosquitto at once, not after the rest of the loop's wake-up.
    public nonisolated func publish(_ message: MQTTMessage) {
        let wake = outbox.withLock { o -> Bool in
            o.messages.append(message)
            if o.messages.count > settings.offlineQueueLimit {
                o.messages.removeFirst(o.messages.count - settings.offlineQueueLimit)
                o.dropped += 1
            }
            defer { o.wakePending = true }
            return !o.wakePending
        }
        if loop.isCurrent {
            assumeIsolated { $0.flush() }
            return
        }
        if wake {
            var one: UInt64 = 1
            _ = withUnsafeBytes(of: &one) { write(wakeFD, $0.baseAddress, 8) }
        }
    }

    // MARK: - The loop thread

    /// Creates the libmosquitto client and starts connecting (in the background: a broker
    /// that is away is retried with backoff, local capture does not wait for it).
    public func start() throws(MQTTClientError) {
        precondition(phase == .idle, "start() once")
        let wakeFD = self.wakeFD
        do {
            wakeToken = try loop.register(
                fd: wakeFD,
                handler: { [weak self] _ in
                    var value: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &value) { read(wakeFD, $0.baseAddress, 8) }
                    self?.assumeIsolated { $0.woken() }
                },
                onRemove: { close(wakeFD) })
            timer = try IOTimer(loop: loop) { [weak self] in self?.assumeIsolated { $0.timerFired() } }
        } catch {
            throw MQTTClientError("cannot watch the MQTT client's descriptors: \(error)")
        }
        guard let m = mosquitto_new(settings.clientID, true, Unmanaged.passUnretained(self).toOpaque()) else {
            throw MQTTClientError("mosquitto_new failed: \(SystemError(errno: errno))")
        }
        handle = MosquittoHandle(pointer: m)
        try configureMosquitto(m, settings, password: password)
        mosquitto_connect_callback_set(m) { _, obj, rc in
            MQTTClient.from(obj).assumeIsolated { $0.connackReceived(rc) }
        }
        mosquitto_disconnect_callback_set(m) { _, obj, rc in
            let reason = describeMosquitto(rc)  // now, while errno still says why
            MQTTClient.from(obj).assumeIsolated { $0.connectionLost(reason) }
        }
        mosquitto_log_callback_set(m) { _, obj, level, text in
            guard level == MOSQ_LOG_ERR, let text, let reason = openSSLReason(String(cString: text)) else { return }
            MQTTClient.from(obj).tlsErrors.withLock { $0.append(reason) }
        }
        mosquitto_message_callback_set(m) { _, obj, message in
            guard let message else { return }
            let topic = String(cString: message.pointee.topic)
            let count = Int(message.pointee.payloadlen)
            let payload = count > 0 ? Array(UnsafeRawBufferPointer(start: message.pointee.payload, count: count)) : []
            MQTTClient.from(obj).assumeIsolated { c in
                // Read while stopping (``stop(timeout:)`` waits for acknowledgements): not taken.
                if c.phase != .stopped { c.onMessage(topic, payload) }
            }
        }
        mosquitto_publish_callback_set(m) { _, obj, mid in
            MQTTClient.from(obj).assumeIsolated { c in
                if c.awaited == mid { c.awaited = nil }
            }
        }
        connect()
    }

    /// Sends what is queued, then the farewells, then the will's payload (retained
    /// `offline`: a clean stop is not a lost connection, so the broker would not send the
    /// will), disconnects and closes the socket. Bounded: waits at most `timeout` for the broker's socket to take it.
    public func stop(timeout: Duration = .seconds(2)) {
        guard phase != .stopped else { return }
        let wasConnected = phase == .connected
        phase = .stopped
        timer?.cancel()
        timer = nil
        // Before the eventfd closes (removing its registration closes it): a connection
        // step still running then never writes to it, and destroys the client itself.
        let stepRunning = connectStep.abandon()
        if let wakeToken { loop.remove(wakeToken) }
        if stepRunning {
            handle = nil
            return
        }
        guard let m = mosq else { return }
        if wasConnected {
            var last = flush(force: true)
            for f in settings.farewells { last = send(f, m) ?? last }
            if let will = settings.will { last = send(will, m) ?? last }
            // libmosquitto writes what it can at once, but holds QoS 1 and 2 messages beyond
            // its window of unacknowledged ones (20) until acknowledgements are read: the
            // broker's answers are read here (shutdown only; bounded by `timeout`) until the
            // last message is through. The broker takes a connection's messages in order.
            let deadline = monotonicMicroseconds() + timeout.microseconds
            awaited = last
            exchange(m, until: deadline) { self.awaited == nil }
            mosquitto_disconnect(m)
            exchange(m, until: deadline) { !mosquitto_want_write(m) }
        }
        unwatch()
        mosquitto_destroy(m)
        handle = nil
    }

    /// The message a stop waits for: nil once libmosquitto says it is through (acknowledged,
    /// or written for QoS 0).
    private var awaited: Int32?

    private static func from(_ obj: UnsafeMutableRawPointer?) -> MQTTClient {
        Unmanaged<MQTTClient>.fromOpaque(obj!).takeUnretainedValue()
    }

    // MARK: Connecting

    /// Starts an attempt: its first step (name lookup, TCP connect, TLS) off the loop.
    private func connect() {
        guard let handle, phase != .stopped else { return }
        phase = .resolving
        unwatch()
        socketReplaced = true
        tlsErrors.withLock { $0.removeAll() }
        // The first call stores host, port and keepalive (also when it fails); later
        // attempts reuse them.
        connectStep.start(handle, first: !addressSet, broker: settings.broker, keepalive: settings.keepalive, wake: wakeFD, owner: self)
    }

    /// The loop's eventfd: a connection step ended, or messages were queued.
    private func woken() {
        if let outcome = connectStep.take() { connectStepEnded(outcome) }
        flush()
    }

    /// Back on the loop: watch the socket the step made, and give the rest of the attempt
    /// (TCP, TLS, CONNACK) `connectTimeout`.
    private func connectStepEnded(_ outcome: MosquittoConnectStep.Outcome) {
        guard phase == .resolving else { return }
        phase = .connecting
        socketReplaced = true
        if outcome.first {
            addressSet = outcome.rc != MOSQ_ERR_INVAL.rawValue && outcome.rc != MOSQ_ERR_NOMEM.rawValue
        }
        if let reason = outcome.reason {
            failed(reason)
            return
        }
        stepConnectionError = outcome.connectionError
        sync()
        timer?.arm(atMonotonicMicroseconds: monotonicMicroseconds() + settings.connectTimeout.microseconds)
    }
    private var addressSet = false
    /// The connection step's ``MosquittoConnectStep/Outcome/connectionError``.
    private(set) var stepConnectionError: Int32 = 0

    /// CONNACK: accepted (0) or refused (bad credentials, not authorised, ...).
    private func connackReceived(_ rc: Int32) {
        socketReplaced = true
        guard rc == 0 else {
            // libmosquitto closes the socket after this callback; connectionLost follows.
            refusal = String(cString: mosquitto_connack_string(rc))
            return
        }
        guard let m = mosq else { return }
        phase = .connected
        backoff.succeeded()
        lastFailure = nil
        for s in settings.subscriptions {
            let rc = mosquitto_subscribe(m, nil, s.topic, s.qos.rawValue)
            if rc != MOSQ_ERR_SUCCESS.rawValue { logger.warning("cannot subscribe to \(s.topic): \(describeMosquitto(rc))") }
        }
        if let birth = settings.birth { send(birth, m) }
        for a in settings.announcements { send(a, m) }
        let dropped = outbox.withLock { o in
            defer { o.dropped = 0 }; return o.dropped
        }
        logger.info("MQTT connected", metadata: ["mqtt.broker": "\(settings.broker)", "mqtt.client": "\(settings.clientID)"])
        onEvent(.connected(dropped: dropped))
        flush()
        armKeepalive()
    }
    private var refusal: String?

    /// The socket closed: a refused CONNACK, a lost connection, or our own disconnect.
    func connectionLost(_ why: String) {
        socketReplaced = true
        guard phase != .stopped else { return }
        let reason = refusal.map { "refused by the broker: \($0)" } ?? why
        refusal = nil
        if phase == .connected {
            phase = .waiting
            logger.info("MQTT connection lost", metadata: ["mqtt.broker": "\(settings.broker)", "mqtt.reason": "\(reason)"])
            onEvent(.disconnected(reason: reason))
            lastFailure = nil
            retry(after: backoff.initial)
        } else {
            failed(reason)
        }
    }

    func failed(_ why: String) {
        guard phase != .stopped else { return }
        phase = .waiting
        var reason = why
        if let tls = tlsErrors.withLock({ $0.last }) {
            // Verification failures name what was checked, so the fix is plain.
            let against = settings.caFile.map { "the CA file \($0)" } ?? "the system's CA store"
            reason =
                "TLS handshake failed: \(tls) (the broker's certificate is checked against \(against) and the host name \(settings.broker.host))"
        }
        let delay = backoff.failed()
        if reason != lastFailure {
            lastFailure = reason
            logger.info("MQTT connection failed", metadata: ["mqtt.broker": "\(settings.broker)", "mqtt.reason": "\(reason)"])
            onEvent(.connectFailed(reason: reason, retry: delay))
        }
        retry(after: delay)
    }

    private func retry(after delay: Duration) {
        sync()
        timer?.arm(atMonotonicMicroseconds: monotonicMicroseconds() + delay.microseconds)
    }

    private func armKeepalive() {
        let period = Int64(max(1, settings.keepalive / 4)) * 1_000_000
        timer?.arm(atMonotonicMicroseconds: monotonicMicroseconds() + period)
    }

    private func timerFired() {
        guard let m = mosq else { return }
        switch phase {
        case .connected:
            let rc = mosquitto_loop_misc(m)
            if rc != MOSQ_ERR_SUCCESS.rawValue, phase == .connected {
                // A keepalive that got no answer: libmosquitto closed the socket.
                connectionLost(describeMosquitto(rc))
            }
            sync()
            if phase == .connected { armKeepalive() }
        case .connecting:
            // No CONNACK in time (a host that drops SYNs, a broker that never answers).
            mosquitto_disconnect(m)
            socketReplaced = true
            if phase == .connecting { failed("no answer within \(settings.connectTimeout)") }
        case .waiting:
            connect()
        case .idle, .resolving, .stopped:
            break
        }
    }

    // MARK: Publishing

    /// Hands queued messages to libmosquitto while connected (`force`: while stopping too).
    /// Returns the message id of the last message handed over, if any.
    @discardableResult
    private func flush(force: Bool = false) -> Int32? {
        guard let m = mosq, phase == .connected || force else {
            outbox.withLock { $0.wakePending = false }
            return nil
        }
        let messages = outbox.withLock { o -> [MQTTMessage] in
            defer { o.messages.removeAll(keepingCapacity: true); o.wakePending = false }
            return o.messages
        }
        var last: Int32?
        for message in messages { last = send(message, m) ?? last }
        sync()
        return last
    }

    /// Hands one message to libmosquitto; returns its message id (nil when refused).
    @discardableResult
    private func send(_ message: MQTTMessage, _ m: OpaquePointer) -> Int32? {
        var mid: Int32 = 0
        let rc = message.payload.withUnsafeBytes {
            mosquitto_publish(m, &mid, message.topic, Int32($0.count), $0.baseAddress, message.qos.rawValue, message.retain)
        }
        if rc != MOSQ_ERR_SUCCESS.rawValue {
            logger.info("MQTT publish failed", metadata: ["mqtt.topic": "\(message.topic)", "mqtt.reason": "\(describeMosquitto(rc))"])
            return nil
        }
        return mid
    }
}
