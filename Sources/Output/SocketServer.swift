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

/// Why the JSON socket could not be set up.
public struct SocketServerError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        /// The path exists and is not a socket: it is never replaced.
        case notASocket = "not a socket"
        /// Another process is listening on the path.
        case inUse = "in use"
        /// The path does not fit in `sockaddr_un`.
        case pathTooLong = "path too long"
        case system = "system error"
    }
    public var code: Code
    public var errno: Int32
    public var context: String
    public var description: String {
        errno == 0 ? context : "\(context): \(String(cString: strerror(errno)))"
    }
}

/// A Unix stream socket that sends every JSON line to every connected client
/// (`run --socket PATH`, `evcapture monitor`).
///
/// - The socket file has mode 0660 (owner and group: the daemon's user and its group) before
///   it accepts connections: it is bound under a temporary name, chmod'ed, checked, put in
///   listening state and only then renamed to its path.
/// - An existing socket at the path is replaced when nothing listens on it (a stale one from
///   a crash); a live one or any other kind of file is an error and left alone.
/// - Writes never block: each client has a queue of pending bytes flushed when its socket
///   becomes writable; a client whose queue exceeds `maxPending` is disconnected (logged),
///   so a stuck `monitor` cannot slow the daemon or make it use unbounded memory.
///
/// Accepting and flushing run on the shared ``IOLoop``; ``broadcast(_:)`` may be called from
/// any thread.
public final class SocketServer: Sendable {
    /// Where the daemon listens by default (systemd's `RuntimeDirectory=evcapture`).
    public static let defaultPath = "/run/evcapture/evcapture.sock"
    /// 256 KiB: about a thousand events a client may lag behind.
    public static let defaultMaxPending = 256 * 1024

    public let path: String
    public let maxPending: Int

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
    }

    private let loop: IOLoop
    private let logger: Logger
    private let state = Mutex(State())
    // The socket file we created, to unlink only our own on close.
    private let inode: (dev: UInt64, ino: UInt64)

    public init(path: String, loop: IOLoop, maxPending: Int = SocketServer.defaultMaxPending, logger: Logger) throws(SocketServerError) {
        self.path = path
        self.loop = loop
        self.maxPending = maxPending
        self.logger = logger

        try Self.clearStale(path)
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
        guard listen(fd, 16) == 0 else { throw fail(.system, errno, "listen on \(path)") }
        guard rename(temporary, path) == 0 else { throw fail(.system, errno, "renaming \(temporary) to \(path)") }
        inode = (UInt64(st.st_dev), UInt64(st.st_ino))

        do throws(IOLoopError) {
            let token = try loop.register(
                fd: fd, interest: .readable,
                handler: { [weak self] _ in self?.acceptAll(fd) },
                onRemove: { close(fd) })
            state.withLock { $0.listenToken = token }
        } catch {
            close(fd)
            unlink(path)
            throw SocketServerError(code: .system, errno: error.errno, context: error.context)
        }
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
        let (listen, clients) = state.withLock { s -> (IOToken?, [IOToken]) in
            s.closed = true
            defer { s.clients.removeAll(); s.listenToken = nil }
            return (s.listenToken, s.clients.values.map(\.token))
        }
        guard let listen else { return }
        loop.remove(listen)
        for t in clients { loop.remove(t) }
        var st = stat()
        if lstat(path, &st) == 0, UInt64(st.st_dev) == inode.dev, UInt64(st.st_ino) == inode.ino { unlink(path) }
    }

    // MARK: - I/O thread

    private func acceptAll(_ listenFD: Int32) {
        while true {
            let fd = evc_accept_nonblock_cloexec(listenFD)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno != EAGAIN { logger.info("accept failed", metadata: ["error": "\(String(cString: strerror(errno)))"]) }
                return
            }
            // Edge-triggered: the handler runs when the client sends (discarded), hangs up, or
            // its socket turns writable again after a full buffer.
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

    private func service(_ fd: Int32, _ ready: Readiness) {
        var hangup = ready.contains(.hangup) || ready.contains(.error)
            || ready.rawValue & EPOLLRDHUP.rawValue != 0
        if ready.contains(.readable) {
            var scratch = [UInt8](repeating: 0, count: 1024)
            while true {
                let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n > 0 { continue }
                if n == 0 { hangup = true }
                else if errno == EINTR { continue }
                else if errno != EAGAIN { hangup = true }
                break
            }
        }
        let token = state.withLock { s -> IOToken? in
            guard var client = s.clients[fd] else { return nil }
            if !hangup, Self.flush(fd, &client) {
                s.clients[fd] = client
                return nil
            }
            s.clients[fd] = nil
            return client.token
        }
        if let token { loop.remove(token) }
    }

    /// Sends what it can without blocking; false when the client is gone.
    private static func flush(_ fd: Int32, _ client: inout Client) -> Bool {
        while client.queued > 0 {
            let n = client.pending.withUnsafeBytes { p in
                send(fd, p.baseAddress! + client.sent, client.queued, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n > 0 {
                client.sent += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
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

    private static func clearStale(_ path: String) throws(SocketServerError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK else {
            throw SocketServerError(
                code: .notASocket, errno: 0,
                context: "\(path) exists and is not a socket; refusing to replace it (remove it or choose another --socket path)")
        }
        if let fd = try? connect(to: path) {
            close(fd)
            throw SocketServerError(code: .inUse, errno: 0, context: "another process is listening on \(path)")
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw SocketServerError(code: .system, errno: errno, context: "removing the stale socket \(path)")
        }
    }
}
