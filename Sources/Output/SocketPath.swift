#if canImport(Glibc)
import Glibc
#endif
import LinuxIO

/// Taking a socket path for the server: its lock file, the listening socket bound under a
/// temporary name and renamed, a stale socket told from a live one; and connecting to one.
extension SocketServer {
    /// Takes `PATH.lock` (mode 0660) without waiting; `inUse` when another server holds it.
    /// ``stop()`` unlinks the file while holding the lock, so a lock taken on a file that is
    /// no longer at its path does not count: taken again on the file that is.
    static func lock(_ path: String) throws(SocketServerError) -> Int32 {
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
    static func listen(at path: String) throws(SocketServerError) -> (Int32, (dev: UInt64, ino: UInt64)) {
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

    static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
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
    static func clearStale(_ path: String) throws(SocketServerError) {
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
