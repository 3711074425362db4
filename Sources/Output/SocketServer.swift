#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import LinuxIO
import Logging
import Synchronization
import Vocabulary

/// A Unix stream socket that sends every JSON line to every connected client
/// (`run --socket PATH`, `evcapture monitor`).
///
/// - The socket file has mode 0660 (owner and group: the daemon's user and its group) before
///   it accepts connections: it is bound under a temporary name, chmod'ed, checked, put in
///   listening state and only then renamed to its path.
/// - One server per path: `PATH.lock` (created next to it) is held with `flock` for the
///   server's life, so two daemons started together cannot both take the path (the second
///   fails with `inUse`); the lock goes with the process, even on SIGKILL (the file stays
///   then, and is reused).
/// - An existing socket at the path is replaced only when connecting to it is refused
///   (`ECONNREFUSED`: a stale one from a crash); a live one, one whose state cannot be told
///   (`EACCES`, ...) or any other kind of file is an error and left alone.
/// - Writes never block: each client has a queue of pending bytes flushed when its socket
///   becomes writable; a client whose queue exceeds `maxPending` is disconnected (logged),
///   so a stuck `monitor` cannot slow the daemon or make it use unbounded memory.
/// - One-way: a client that sends data is disconnected after one read of at most 1 KiB
///   (logged), so a client cannot keep the I/O thread reading. A client that shuts down its
///   writing side (`socat - UNIX-CONNECT:PATH </dev/null`) keeps receiving lines.
/// - At most `maxClients` clients; one more is told so in an `error` line and closed. When
///   `accept` fails for want of descriptors (EMFILE, ENFILE), a descriptor held in reserve
///   is freed to accept and close the connection, so the listening socket (level-triggered)
///   never makes the I/O thread spin. Refusals are logged at most once a second.
///
/// Accepting and flushing run on the shared ``IOLoop``; ``broadcast(_:)`` may be called from
/// any thread.
public final class SocketServer: Sendable {
    /// 256 KiB: about a thousand events a client may lag behind.
    public static let defaultMaxPending = 256 * 1024
    /// Clients at once: monitors, scripts, a bridge; more is a leak or an attack.
    public static let defaultMaxClients = 16
    /// The most read from a client (which then is disconnected): the socket is one-way.
    static let readLimit = 1024

    public let path: String
    let maxPending: Int
    public let maxClients: Int

    private struct Client {
        var token: IOToken
        var pending: [UInt8] = []
        /// Bytes of `pending` already sent (removed in bulk, not per write).
        var sent = 0
        var queued: Int { pending.count - sent }
    }
    private struct State {
        var clients: [Int32: Client] = [:]
        var listenToken: IOToken?
        var closed = false
        /// An open /dev/null given up to accept (and close) a connection when the process is
        /// out of descriptors; -1 while used.
        var reserveFD: Int32 = -1
        /// Connections refused since the last log line, and when that was.
        var refused = 0
        var refusedLoggedAt: Timestamp?
    }

    private let loop: IOLoop
    private let logger: Logger
    private let state = Mutex(State())
    // The socket file we created, to unlink only our own on close.
    private let inode: (dev: UInt64, ino: UInt64)
    /// `PATH.lock`, held (flock) while the server exists.
    private let lockFD: Int32

    public init(
        path: String, loop: IOLoop, maxPending: Int = SocketServer.defaultMaxPending,
        maxClients: Int = SocketServer.defaultMaxClients, logger: Logger
    ) throws(SocketServerError) {
        self.path = path
        self.loop = loop
        self.maxPending = maxPending
        self.maxClients = max(1, maxClients)
        self.logger = logger

        let lockFD = try Self.lock(path)
        let listenFD: Int32
        do throws(SocketServerError) {
            try Self.clearStale(path)
            (listenFD, inode) = try Self.listen(at: path)
        } catch {
            close(lockFD)
            throw error
        }
        self.lockFD = lockFD
        let reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)
        state.withLock { $0.reserveFD = reserve }

        // Level-triggered: a connection left in the backlog wakes the loop again, so
        // acceptAll leaves none there (see there).
        do throws(SystemError) {
            let token = try loop.register(
                fd: listenFD, interest: .readable,
                handler: { [weak self] _ in self?.acceptAll(listenFD) },
                onRemove: { close(listenFD) })
            state.withLock { $0.listenToken = token }
        } catch {
            close(listenFD)
            unlink(path)
            throw SocketServerError(errno: error.errno, context: error.context)
        }
    }

    deinit {
        let reserve = state.withLock { $0.reserveFD }
        if reserve >= 0 { close(reserve) }
        close(lockFD)
    }

    /// The number of connected clients.
    var clientCount: Int { state.withLock { $0.clients.count } }

    /// Sends one JSON line (a newline is added when missing) to every client.
    func broadcast(_ line: String) {
        var bytes = Array(line.utf8)
        if bytes.last != 10 { bytes.append(10) }
        broadcast(bytes: bytes)
    }

    /// Sends raw bytes (one or more complete lines) to every client.
    func broadcast(bytes: [UInt8]) {
        var dropped: [(Int32, IOToken, Int)] = []
        state.withLock { s in
            for fd in Array(s.clients.keys) {
                guard var client = s.clients[fd] else { continue }
                if client.queued == 0 {
                    client.pending = bytes
                    client.sent = 0
                } else {
                    client.pending.append(contentsOf: bytes)
                }
                if !Self.flush(fd, &client) || client.queued > maxPending {
                    dropped.append((fd, client.token, client.queued))
                    s.clients[fd] = nil
                } else {
                    s.clients[fd] = client
                }
            }
        }
        for (fd, token, queued) in dropped {
            logger.info("socket client dropped", metadata: ["socket.client": "\(fd)", "socket.pending": "\(queued)"])
            loop.remove(token)
        }
    }

    /// Stops listening, disconnects every client and removes the socket file.
    public func stop() {
        let (wasClosed, listen, clients) = state.withLock { s -> (Bool, IOToken?, [IOToken]) in
            defer { s.closed = true; s.clients.removeAll(); s.listenToken = nil }
            return (s.closed, s.listenToken, s.clients.values.map(\.token))
        }
        guard !wasClosed else { return }
        if let listen { loop.remove(listen) }
        for t in clients { loop.remove(t) }
        var st = stat()
        if lstat(path, &st) == 0, UInt64(st.st_dev) == inode.dev, UInt64(st.st_ino) == inode.ino { unlink(path) }
        // Still locked: the next server takes a new file (see lock(_:)). Closed in deinit.
        unlink(path + ".lock")
    }

    // MARK: - I/O thread

    /// Accepts until the backlog is empty. Every pending connection is taken, even those
    /// refused (over the client limit, or no descriptor left), so the level-triggered
    /// listening socket does not wake the loop again for them.
    private func acceptAll(_ listenFD: Int32) {
        while true {
            let fd: Int32
            do {
                fd = try retryingEINTR { evc_accept_nonblock_cloexec(listenFD) }
            } catch {
                let e = error.errno
                if e == ECONNABORTED { continue }
                if e == EMFILE || e == ENFILE {
                    // Out of descriptors: free the reserve, take the connection and close it.
                    let reserve = state.withLock { s in
                        defer { s.reserveFD = -1 }; return s.reserveFD
                    }
                    guard reserve >= 0 else {
                        // Already used and not yet back: nothing left to accept with. The
                        // loop would spin; stop listening rather than that.
                        logger.error(
                            "socket: out of file descriptors and no reserve; no longer accepting clients",
                            metadata: ["socket.path": "\(path)", "error": "\(String(cString: strerror(e)))"])
                        let token = state.withLock { s in
                            defer { s.listenToken = nil }; return s.listenToken
                        }
                        if let token { loop.remove(token) }
                        return
                    }
                    close(reserve)
                    let spare = evc_accept_nonblock_cloexec(listenFD)
                    if spare >= 0 { close(spare) }
                    let again = open("/dev/null", O_RDONLY | O_CLOEXEC)
                    state.withLock { $0.reserveFD = again }
                    refused(because: "out of file descriptors (\(String(cString: strerror(e))))")
                    if spare < 0 { return }
                    continue
                }
                if e != EAGAIN { logger.info("accept failed", metadata: ["error": "\(String(cString: strerror(e)))"]) }
                return
            }
            let full = state.withLock { $0.clients.count >= maxClients }
            if full {
                // Tell the client why before closing (best effort: one non-blocking send).
                let line = #"{"event":"error","message":"too many clients","code":"socket-full"}"# + "\n"
                var text = line
                _ = text.withUTF8 { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
                close(fd)
                refused(because: "\(maxClients) clients connected (the limit)")
                continue
            }
            // Edge-triggered: the handler runs when the client sends (it is dropped), hangs
            // up, or its socket turns writable again after a full buffer.
            let interest = Readiness(rawValue: EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue)
            do {
                // Handlers run one at a time on this thread, so the client's handler cannot run
                // before it is in `clients`.
                let token = try loop.register(
                    fd: fd, interest: interest,
                    handler: { [weak self] ready in self?.service(fd, ready) },
                    onRemove: { close(fd) })
                let closed = state.withLock { s -> Bool in
                    if !s.closed { s.clients[fd] = Client(token: token) }
                    return s.closed
                }
                if closed { loop.remove(token) }
            } catch {
                close(fd)
            }
        }
    }

    /// Logs refused connections: the first at once, then at most one line a second with
    /// the count since.
    private func refused(because reason: String) {
        let now = monotonicNow()
        let count = state.withLock { s -> Int? in
            s.refused += 1
            if let last = s.refusedLoggedAt, now - last < .seconds(1) { return nil }
            defer { s.refused = 0; s.refusedLoggedAt = now }
            return s.refused
        }
        if let count {
            logger.warning(
                "socket client refused: \(reason)",
                metadata: ["socket.path": "\(path)", "socket.refused": "\(count)"])
        }
    }

    private func service(_ fd: Int32, _ ready: Readiness) {
        // EPOLLRDHUP alone is a client that shut down its writing side (`socat ... </dev/null`):
        // it still reads, so it stays. Gone is HUP, ERR, or a failed send.
        var gone = ready.contains(.hangup) || ready.contains(.error)
        var sent = 0
        if ready.contains(.readable) {
            // One read, bounded: the socket is one-way, so data means a confused or hostile
            // client, and reading it in a loop is what a flood would make us do.
            var scratch = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            do {
                let n = try retryingEINTR {
                    withUnsafeMutableBytes(of: &scratch) { recv(fd, $0.baseAddress, min($0.count, Self.readLimit), Int32(MSG_DONTWAIT)) }
                }
                if n > 0 {
                    sent = n
                    gone = true
                }
            } catch {
                gone = error.errno != EAGAIN
            }
        }
        let token = state.withLock { s -> IOToken? in
            guard var client = s.clients[fd] else { return nil }
            if !gone, Self.flush(fd, &client) {
                s.clients[fd] = client
                return nil
            }
            s.clients[fd] = nil
            return client.token
        }
        if let token {
            if sent > 0 {
                logger.info(
                    "socket client dropped: it sent data (the socket is one-way)",
                    metadata: ["socket.client": "\(fd)", "socket.received": "\(sent)"])
            }
            loop.remove(token)
        }
    }

    /// Sends what it can without blocking; false when the client is gone.
    private static func flush(_ fd: Int32, _ client: inout Client) -> Bool {
        while client.queued > 0 {
            do {
                let n = try retryingEINTR {
                    client.pending.withUnsafeBytes { p in
                        send(fd, p.baseAddress! + client.sent, client.queued, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                    }
                }
                guard n > 0 else { return false }
                client.sent += n
            } catch  where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                break
            } catch {
                return false
            }
        }
        if client.queued == 0 {
            client.pending.removeAll(keepingCapacity: client.pending.count <= 65536)
            client.sent = 0
        } else if client.sent > 65536 {
            client.pending.removeFirst(client.sent)
            client.sent = 0
        }
        return true
    }
}
