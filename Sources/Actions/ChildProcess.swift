#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Vocabulary
import LinuxIO

/// posix_spawn with the child in its own process group, stdin from /dev/null, stdout and
/// stderr into a pipe, no other descriptor of the daemon (a library's socket that is not
/// close-on-exec, libmosquitto's broker connection among them, would otherwise outlive the
/// daemon in a long hook, and the broker would never see the connection die), and default
/// signal dispositions (a daemon that ignores SIGPIPE must not pass that on). No shell is
/// involved: `argv` reaches `execve` as it is.
struct ChildProcess {
    let pid: pid_t
    let outputFD: Int32
    let name: String

    /// `argv[0]` containing `/` is run as is; otherwise it is looked up in `searchPath`
    /// (a `PATH`-style list).
    static func spawn(argv: [String], environment: [String: String], searchPath: String?) throws(ActionError) -> ChildProcess {
        let name = argv.first ?? ""
        guard !argv.isEmpty, !name.isEmpty else { throw .hook(name: "(empty)", problem: "empty argv") }
        guard let executable = resolve(name, searchPath: searchPath ?? environment["PATH"] ?? "/usr/bin:/bin") else {
            throw .hook(name: name, problem: "not found or not executable")
        }
        var fds: [Int32] = [-1, -1]
        guard evc_pipe_cloexec(&fds) == 0 else { throw .hook(name: name, problem: "pipe: \(String(cString: strerror(errno)))") }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        evc_spawn_close_from(&actions, 3)

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t()
        sigemptyset(&none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setpgroup(&attr, 0)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let cArgv = argv.map { strdup($0) } + [nil]
        let cEnv = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in cArgv { free(p) }
            for p in cEnv { free(p) }
        }
        var pid: pid_t = 0
        var rc = posix_spawn(&pid, executable, &actions, &attr, cArgv, cEnv)
        // ETXTBSY: the program is open for writing somewhere (just installed or edited, or the
        // write descriptor leaked into another child); it clears within moments.
        for _ in 0..<10 where rc == ETXTBSY {
            usleep(20_000)
            rc = posix_spawn(&pid, executable, &actions, &attr, cArgv, cEnv)
        }
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw .hook(name: name, problem: "spawning \(executable): \(String(cString: strerror(rc)))")
        }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return ChildProcess(pid: pid, outputFD: fds[0], name: name)
    }

    /// The first executable `name` in `searchPath`, or `name` itself when it has a `/`.
    static func resolve(_ name: String, searchPath: String) -> String? {
        if name.contains("/" as Character) { return access(name, X_OK) == 0 ? name : nil }
        for dir in searchPath.split(separator: ":", omittingEmptySubsequences: true) {
            let candidate = "\(dir)/\(name)"
            var st = stat()
            if stat(candidate, &st) == 0, st.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// The longest output line passed on; the rest of a longer line is dropped (a hook that
    /// writes a photo to stdout must not grow memory).
    static let maxLineBytes = 4096

    /// Blocks until the child has exited (killing its group after `timeout`), passing each
    /// complete output line to `onLine`, cut at `maxLineBytes` (with `…` and the count of
    /// bytes dropped once its end comes). Memory stays bounded whatever the child writes, and
    /// a child that writes without pause is still killed on time. Reaps the child and closes
    /// the pipe.
    func wait(timeout: Duration, maxLineBytes: Int = ChildProcess.maxLineBytes, onLine: (String) -> Void) -> ChildOutcome {
        let start = ContinuousClock.now
        var timedOut = false
        var pending = [UInt8]()
        var kept = [UInt8]()
        var pipeOpen = true
        var status: Int32 = 0
        var exited = false

        /// Bytes of the current line dropped past `maxLineBytes`.
        var dropped = 0
        func endLine() {
            var line = String(decoding: pending, as: UTF8.self)
            if dropped > 0 { line += "… (\(dropped) more bytes dropped)" }
            onLine(line)
            pending.removeAll(keepingCapacity: true)
            dropped = 0
        }
        func take(_ bytes: ArraySlice<UInt8>) {
            var rest = bytes
            while !rest.isEmpty {
                let nl = rest.firstIndex(of: 10)
                let part = rest[..<(nl ?? rest.endIndex)]
                let room = max(0, maxLineBytes - pending.count)
                pending.append(contentsOf: part.prefix(room))
                dropped += max(0, part.count - room)
                guard let nl else { return }
                endLine()
                rest = rest[(nl + 1)...]
            }
        }
        // At most 16 reads (64 KiB) per call, then back to the exit and timeout checks.
        func drain() {
            var buffer = [UInt8](repeating: 0, count: 4096)
            var reads = 0
            while pipeOpen && reads < 16 {
                let n: Int
                do {
                    n = try retryingEINTR { buffer.withUnsafeMutableBytes { read(outputFD, $0.baseAddress, $0.count) } }
                } catch {
                    if error.errno != EAGAIN { pipeOpen = false }
                    return
                }
                if n > 0 {
                    reads += 1
                    if kept.count < 65536 { kept.append(contentsOf: buffer[0..<min(n, 65536 - kept.count)]) }
                    take(buffer[0..<n])
                } else {
                    pipeOpen = false
                }
            }
        }

        // The child's exit wakes the poll through its pidfd; without one (a kernel before 5.3)
        // the poll wakes every 50 ms to look.
        let pidfd = evc_pidfd_open(pid)
        defer { if pidfd >= 0 { close(pidfd) } }
        var lastSignal: ContinuousClock.Instant?
        while !exited {
            // Until the next deadline: the timeout, then a SIGKILL each second after SIGTERM.
            let deadline = lastSignal.map { $0 + .seconds(1) } ?? start + timeout
            let left = max(0, (deadline - ContinuousClock.now) / .milliseconds(1))
            let wait = Int32(pidfd >= 0 ? min(left.rounded(.up), 60_000) : min(left.rounded(.up), 50))
            var fds = [
                pollfd(fd: pipeOpen ? outputFD : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&fds, 2, wait)
            if pipeOpen { drain() }
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno == ECHILD) {
                exited = true
                break
            }
            let now = ContinuousClock.now
            if lastSignal == nil, now - start >= timeout {
                timedOut = true
                lastSignal = now
                kill(-pid, SIGTERM)
            } else if let last = lastSignal, now - last >= .seconds(1) {
                lastSignal = now
                kill(-pid, SIGKILL)
            }
        }
        // Output written just before exit; a grandchild still holding the pipe is not waited for.
        drain()
        if !pending.isEmpty || dropped > 0 { endLine() }
        close(outputFD)
        let termSignal = status & 0x7f
        return ChildOutcome(
            exitStatus: termSignal == 0 ? (status >> 8) & 0xff : nil,
            signal: termSignal != 0 && termSignal != 0x7f ? termSignal : nil,
            timedOut: timedOut,
            output: String(decoding: kept, as: UTF8.self))
    }
}
