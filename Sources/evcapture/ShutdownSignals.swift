#if canImport(Glibc)
import Glibc
import LinuxIO
#endif

/// SIGTERM, SIGINT and SIGHUP for the daemon, without libdispatch: swift-service-lifecycle's own
/// signal handling is a `DispatchSource`, which starts libdispatch's manager thread and,
/// with its worker pool, a timer that wakes the process every second.
///
/// A handler writes the signal's number to a pipe (`write` is async-signal-safe); a thread
/// of its own blocks in `read` on the other end and calls `action`, so nothing wakes until
/// a signal comes. No signal mask is involved: any thread may take the signal, and child
/// processes start with the default dispositions as before.
enum ShutdownSignals {
    /// Calls `action` with the signal's number on the watcher thread, once per signal.
    /// Call once, before anything that must be stopped gracefully has started.
    static func watch(_ signals: [Int32], action: @escaping @Sendable (Int32) -> Void) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { fatalError("pipe: \(String(cString: strerror(errno)))") }
        // Before any hook can be spawned: no child inherits either end.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        writeEnd = fds[1]
        let reader = Reader(fd: fds[0], action: action)
        startThread(name: "evc-signals") { reader.run() }

        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals {
            var handler = sigaction()
            handler.__sigaction_handler.sa_handler = { signal in
                var byte = UInt8(truncatingIfNeeded: signal)
                let saved = errno
                _ = write(ShutdownSignals.writeEnd, &byte, 1)
                errno = saved
            }
            handler.sa_flags = SA_RESTART
            sigemptyset(&handler.sa_mask)
            sigaction(signal, &handler, nil)
            sigaddset(&set, signal)
        }
        // A parent may have started us with them blocked; they are how we are stopped.
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Whether `signal` is ignored now (inherited: `nohup` ignores SIGHUP).
    static func isIgnored(_ signal: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(signal, nil, &current) == 0 else { return false }
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }

    /// The pipe's write end, for the handler. Written once in `watch`, before any handler
    /// is installed; read only by handlers afterwards.
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    private final class Reader: Sendable {
        let fd: Int32
        let action: @Sendable (Int32) -> Void
        init(fd: Int32, action: @escaping @Sendable (Int32) -> Void) {
            self.fd = fd
            self.action = action
        }
        func run() {
            var byte: UInt8 = 0
            while (try? retryingEINTR { read(fd, &byte, 1) }) == 1 {
                action(Int32(byte))
            }
        }
    }
}
