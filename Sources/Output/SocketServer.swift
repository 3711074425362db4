#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import LinuxIO
import Logging
import Synchronization
import Capture
import Evdev
import Actions

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
    /// Where the daemon listens by default (systemd's `RuntimeDirectory=evcapture`).
    public static let defaultPath = "/run/evcapture/evcapture.sock"
    /// 256 KiB: about a thousand events a client may lag behind.
    public static let defaultMaxPending = 256 * 1024
    /// Clients at once: monitors, scripts, a bridge; more is a leak or an attack.
    public static let defaultMaxClients = 16
    /// The most read from a client (which then is disconnected): the socket is one-way.
    static let readLimit = 1024

    public let path: String
    public let maxPending: Int
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
        /// Connections refused since the last log line, and when that was (monotonic µs).
        var refused = 0
        var refusedLoggedAt: Int64?
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
            throw SocketServerError(code: .system, errno: error.errno, context: error.context)
        }
    }

    deinit {
        let reserve = state.withLock { $0.reserveFD }
        if reserve >= 0 { close(reserve) }
        close(lockFD)
    }

    /// Takes `PATH.lock` (mode 0660) without waiting; `inUse` when another server holds it.
    /// ``stop()`` unlinks the file while holding the lock, so a lock taken on a file that is
    /// no longer at its path does not count: taken again on the file that is.
    private static func lock(_ path: String) throws(SocketServerError) -> Int32 {
        let lockPath = path + ".lock"
        while true {
            let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o660)
            guard fd >= 0 else { throw SocketServerError(code: .system, errno: errno, context: "opening \(lockPath)") }
            var e: Int32 = 0
            do { _ = try retryingEINTR { flock(fd, LOCK_EX | LOCK_NB) } } catch { e = error.errno }
            if e != 0 {
                close(fd)
                if e == EWOULDBLOCK {
                    throw SocketServerError(code: .inUse, errno: 0, context: "another process holds \(lockPath): it serves \(path)")
                }
                throw SocketServerError(code: .system, errno: e, context: "locking \(lockPath)")
            }
            var mine = stat(), there = stat()
            if fstat(fd, &mine) == 0, stat(lockPath, &there) == 0, mine.st_dev == there.st_dev, mine.st_ino == there.st_ino {
                return fd
            }
            close(fd)  // unlinked by the server that had it: try the current one
        }
    }

    /// Binds under a temporary name, sets the mode, listens and renames to `path`; returns
    /// the listening socket and the socket file's device and inode.
    private static func listen(at path: String) throws(SocketServerError) -> (Int32, (dev: UInt64, ino: UInt64)) {
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { String(path[..<$0]) } ?? "."
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = (dir.isEmpty ? "" : dir) + "/.\(base).\(getpid()).tmp"

        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketServerError(code: .system, errno: errno, context: "socket(AF_UNIX)") }
        func fail(_ code: SocketServerError.Code, _ e: Int32, _ context: String) -> SocketServerError {
            close(fd)
            unlink(temporary)
            return SocketServerError(code: code, errno: e, context: context)
        }
        unlink(temporary)
        guard Self.withAddress(temporary, { bind(fd, $0, $1) }) == 0 else {
            if temporary.utf8.count >= 108 { throw fail(.pathTooLong, 0, "socket path \(path) is too long (at most 100 bytes)") }
            throw fail(.system, errno, "binding \(temporary)")
        }
        // Not listening yet: nobody can connect before the mode is right.
        guard chmod(temporary, 0o660) == 0 else { throw fail(.system, errno, "chmod 0660 \(temporary)") }
        var st = stat()
        guard lstat(temporary, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK, st.st_mode & 0o777 == 0o660 else {
            throw fail(.system, EPERM, "\(temporary) does not have mode 0660 after chmod")
        }
        guard Glibc.listen(fd, 16) == 0 else { throw fail(.system, errno, "listen on \(path)") }
        guard rename(temporary, path) == 0 else { throw fail(.system, errno, "renaming \(temporary) to \(path)") }

        return (fd, (UInt64(st.st_dev), UInt64(st.st_ino)))
    }

    /// The number of connected clients.
    public var clientCount: Int { state.withLock { $0.clients.count } }

    /// Sends one JSON line (a newline is added when missing) to every client.
    public func broadcast(_ line: String) {
        var bytes = Array(line.utf8)
        if bytes.last != 10 { bytes.append(10) }
        broadcast(bytes: bytes)
    }

    /// Sends raw bytes (one or more complete lines) to every client.
    public func broadcast(bytes: [UInt8]) {
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
                    let reserve = state.withLock { s in defer { s.reserveFD = -1 }; return s.reserveFD }
                    guard reserve >= 0 else {
                        // Already used and not yet back: nothing left to accept with. The
                        // loop would spin; stop listening rather than that.
                        logger.error(
                            "socket: out of file descriptors and no reserve; no longer accepting clients",
                            metadata: ["socket.path": "\(path)", "error": "\(String(cString: strerror(e)))"])
                        let token = state.withLock { s in defer { s.listenToken = nil }; return s.listenToken }
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
        let now = monotonicNow().microseconds
        let count = state.withLock { s -> Int? in
            s.refused += 1
            if let last = s.refusedLoggedAt, now - last < 1_000_000 { return nil }
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
                let n = try retryingEINTR { withUnsafeMutableBytes(of: &scratch) { recv(fd, $0.baseAddress, min($0.count, Self.readLimit), Int32(MSG_DONTWAIT)) } }
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
            } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
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

    // MARK: - Set-up helpers

    private static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else {
            errno = ENAMETOOLONG
            return withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, 0) } }
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, len) } }
    }

    /// Connects to a Unix stream socket (for `monitor` and tests); returns the fd or throws.
    public static func connect(to path: String) throws(SocketServerError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketServerError(code: .system, errno: errno, context: "socket(AF_UNIX)") }
        guard path.utf8.count < 108 else {
            close(fd)
            throw SocketServerError(code: .pathTooLong, errno: 0, context: "socket path \(path) is too long")
        }
        if withAddress(path, { Glibc.connect(fd, $0, $1) }) != 0 {
            let e = errno
            close(fd)
            throw SocketServerError(code: .system, errno: e, context: "connecting to \(path)")
        }
        return fd
    }

    /// Removes a stale socket at `path`: only when connecting to it is refused. Called with
    /// the path's lock held, so no other server is between its check and its rename.
    private static func clearStale(_ path: String) throws(SocketServerError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK else {
            throw SocketServerError(
                code: .notASocket, errno: 0,
                context: "\(path) exists and is not a socket; refusing to replace it (remove it or choose another --socket path)")
        }
        switch probe(path) {
        case 0, EAGAIN, EINPROGRESS:
            // Accepted, or a full backlog: someone listens.
            throw SocketServerError(code: .inUse, errno: 0, context: "another process is listening on \(path)")
        case ECONNREFUSED:
            break
        case ENOENT:
            return  // removed meanwhile
        case let e:
            throw SocketServerError(code: .system, errno: e, context: "cannot tell whether \(path) is in use; not replacing it")
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw SocketServerError(code: .system, errno: errno, context: "removing the stale socket \(path)")
        }
    }

    /// A non-blocking connect to `path`: 0 when it connected, else its errno.
    static func probe(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        do {
            _ = try retryingEINTR { withAddress(path, { Glibc.connect(fd, $0, $1) }) }
            return 0
        } catch {
            return error.errno
        }
    }
}
