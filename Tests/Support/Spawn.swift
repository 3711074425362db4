#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Foundation
import Synchronization

/// Where a child's stdout or stderr goes.
public enum ChildOutput: Sendable {
    /// `/dev/null`.
    case null
    /// This descriptor of the test's (the test keeps, reads or closes its other end).
    case descriptor(Int32)
    /// A new pipe: ``TestChild/stdout`` or ``TestChild/stderr`` is its read end.
    case pipe
    /// For stderr: wherever stdout goes (one stream of both, in the order written).
    case stdout
}

/// Why a program could not be started (or a pipe made for it).
public struct SpawnError: Error, CustomStringConvertible {
    public var what: String
    public var errno: Int32
    public init(what: String, errno: Int32) {
        self.what = what
        self.errno = errno
    }
    public var description: String { "\(what): \(String(cString: strerror(errno)))" }
}

/// A program a test started, the one way the tests start one: posix_spawn (Foundation's
/// `Process` needs a CFRunLoop socket pair that the VM's chroot does not always give), as a
/// shell starts it — no signal blocked, SIGTERM, SIGINT, SIGPIPE, SIGCHLD and SIGHUP at their
/// default dispositions (the test process may block or ignore them on its threads, and a
/// child inherits that) — with stdin from `/dev/null`, stdout and stderr where asked, and no
/// other descriptor of the test process: tests run in parallel, and a child holding another
/// test's pipe or socket keeps it open for as long as it lives.
public final class TestChild: Sendable {
    public let pid: pid_t
    /// The read end of stdout's pipe (``ChildOutput/pipe``), the caller's to read and close.
    public let stdout: Int32?
    /// The read end of stderr's pipe.
    public let stderr: Int32?
    private let status = Mutex<Int32?>(nil)

    /// Starts `argv[0]` (a path, or a name looked up on `PATH`) with `argv`; `environment`
    /// replaces the test's own (nil: the test's); `directory`: its working directory (nil: the
    /// test's); `passing`: descriptors of the test's the child gets, as its 3, 4, ...
    public init(
        _ argv: [String], environment: [String: String]? = nil, directory: String? = nil, stdout: ChildOutput = .null,
        stderr: ChildOutput = .null, passing: [Int32] = []
    ) throws(SpawnError) {
        precondition(!argv.isEmpty, "a child needs a program")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Each pipe made here: [read, write], close-on-exec (another test's child must not get them).
        var pipes: [[Int32]] = []
        defer { for p in pipes { close(p[1]) } }
        func route(_ output: ChildOutput, to fd: Int32) throws(SpawnError) -> Int32? {
            switch output {
            case .null:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            case .descriptor(let d):
                posix_spawn_file_actions_adddup2(&actions, d, fd)
            case .stdout:
                posix_spawn_file_actions_adddup2(&actions, 1, fd)
            case .pipe:
                var p: [Int32] = [-1, -1]
                guard evc_pipe_cloexec(&p) == 0 else { throw SpawnError(what: "pipe", errno: errno) }
                pipes.append(p)
                posix_spawn_file_actions_adddup2(&actions, p[1], fd)
                return p[0]
            }
            return nil
        }
        let out: Int32?
        let err: Int32?
        do throws(SpawnError) {
            out = try route(stdout, to: 1)
            err = try route(stderr, to: 2)
        } catch {
            for p in pipes { close(p[0]) }
            throw error
        }
        // dup2 onto itself clears close-on-exec (POSIX.1-2017, glibc).
        for (i, fd) in passing.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, 3 + Int32(i)) }
        evc_spawn_close_from(&actions, 3 + Int32(passing.count))
        if let directory { evc_spawn_chdir(&actions, directory) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGINT, SIGPIPE, SIGCHLD, SIGHUP] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let cargv: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let cenv: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { (cargv + (cenv ?? [])).forEach { free($0) } }
        var pid: pid_t = 0
        let rc =
            cenv.map { env in env.withUnsafeBufferPointer { posix_spawnp(&pid, argv[0], &actions, &attributes, cargv, $0.baseAddress) } }
            ?? posix_spawnp(&pid, argv[0], &actions, &attributes, cargv, environ)
        guard rc == 0 else {
            for p in pipes { close(p[0]) }
            throw SpawnError(what: "posix_spawn \(argv[0])", errno: rc)
        }
        self.pid = pid
        self.stdout = out
        self.stderr = err
    }

    /// The exit status once reaped (128 + the signal when killed).
    public var exitStatus: Int32? { status.withLock { $0 } }

    /// Whether it still runs (reaps it when it has exited).
    public var isRunning: Bool {
        status.withLock { st in
            if st != nil { return false }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return true }
            st = Self.exitCode(raw)
            return false
        }
    }

    /// Waits for the exit; the exit status.
    @discardableResult
    public func wait() -> Int32 {
        status.withLock { st in
            if let st { return st }
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
            let code = Self.exitCode(raw)
            st = code
            return code
        }
    }

    /// Sends `signal` while it runs.
    public func signal(_ signal: Int32) { if isRunning { kill(pid, signal) } }

    /// SIGKILL and reap, when it still runs (an owner's deinit: no test leaves a child behind).
    public func killAndReap() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        wait()
    }

    private static func exitCode(_ raw: Int32) -> Int32 { (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f) }
}

extension TestChild {
    /// A child whose stdout and stderr both go to the file at `logPath` (created or emptied).
    public convenience init(_ argv: [String], environment: [String: String]? = nil, log logPath: String) throws(SpawnError) {
        let fd = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SpawnError(what: "opening \(logPath)", errno: errno) }
        defer { close(fd) }
        try self.init(argv, environment: environment, stdout: .descriptor(fd), stderr: .stdout)
    }

    /// SIGTERM, then SIGKILL when it still runs after `timeout`; reaped either way.
    public func terminate(timeout: Duration) {
        signal(SIGTERM)
        if !pollUntil(timeout: timeout, { !isRunning }) { killAndReap() }
    }
}

/// What a program that ran to its end wrote, and its exit status.
public struct ProgramResult: Sendable, CustomStringConvertible {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var succeeded: Bool { status == 0 }
    public var description: String { "exit status \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
}

/// Runs a program (``TestChild``: `path` or a name on `PATH`) to its end and collects its
/// output; both pipes are drained at once, so a run that writes much to stderr never waits on
/// it. One still running after `timeout` is killed (SIGTERM, SIGKILL 2 s later) and reported.
public func runProgram(
    _ path: String, _ arguments: [String], environment: [String: String]? = nil, timeout: Duration = .seconds(60),
    passing: [Int32] = []
) throws(SpawnError) -> ProgramResult {
    let child = try TestChild([path] + arguments, environment: environment, stdout: .pipe, stderr: .pipe, passing: passing)
    let deadline = ContinuousClock.now + timeout
    var collected: [[UInt8]] = [[], []]
    var fds = [child.stdout!, child.stderr!].map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    defer { for fd in fds where fd.fd >= 0 { close(fd.fd) } }
    var open = 2
    var buffer = [UInt8](repeating: 0, count: 65536)
    func timedOut() -> SpawnError {
        child.signal(SIGTERM)
        if !pollUntil(timeout: .seconds(2), { !child.isRunning }) { child.killAndReap() }
        return SpawnError(what: "\(path) still running after \(timeout), killed", errno: ETIMEDOUT)
    }
    while open > 0 {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { throw timedOut() }
        let ms = Int32(min(left / .milliseconds(1) + 1, 60_000))
        if poll(&fds, 2, ms) < 0 {
            if errno == EINTR { continue }
            break
        }
        for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
            let n = read(fds[i].fd, &buffer, buffer.count)
            if n > 0 {
                collected[i] += buffer[0..<n]
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                close(fds[i].fd)
                fds[i].fd = -1
                open -= 1
            }
        }
    }
    // Its output ended; a program that closed it early may still run.
    guard pollUntil(timeout: max(deadline - ContinuousClock.now, .milliseconds(1)), { !child.isRunning }) else { throw timedOut() }
    return ProgramResult(
        status: child.wait(), stdout: String(decoding: collected[0], as: UTF8.self), stderr: String(decoding: collected[1], as: UTF8.self))
}

/// Runs this test bundle again with only the test `name` (`--filter`), to its end: a test
/// whose other half must be a process of its own (another user, no other test's threads, or a
/// process that may die) tells the two apart by a variable in `environment`.
public func runThisTestAlone(
    _ name: String, environment: [String: String], passing: [Int32] = [], timeout: Duration = .seconds(60)
) throws(SpawnError) -> ProgramResult {
    guard let resolved = realpath("/proc/self/exe", nil) else { throw SpawnError(what: "realpath /proc/self/exe", errno: errno) }
    let bundle = String(cString: resolved)
    free(resolved)
    return try runProgram(
        bundle, ["--testing-library", "swift-testing", "--filter", name], environment: environment, timeout: timeout, passing: passing)
}

/// Reads a descriptor to its end on a thread of its own and keeps everything read, so a
/// child never blocks on a full pipe and a test can look at what came so far.
public final class DescriptorCollector: Sendable {
    private let buffer = Mutex<[UInt8]>([])
    private let finished = Atomic<Bool>(false)
    public let fd: Int32

    /// Takes ownership of `fd` (closed at end of file).
    public init(fd: Int32, name: String) {
        self.fd = fd
        let thread = Thread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                buffer.withLock { $0 += chunk[0..<n] }
            }
            close(fd)
            finished.store(true, ordering: .releasing)
        }
        thread.name = name
        thread.start()
    }

    /// Whether the other end was closed (end of file read).
    public var isFinished: Bool { finished.load(ordering: .acquiring) }
    public var byteCount: Int { buffer.withLock { $0.count } }
    public var text: String { String(decoding: buffer.withLock { $0 }, as: UTF8.self) }

    /// The complete lines read so far.
    public var lines: [String] {
        let bytes = buffer.withLock { $0 }
        guard let lastNewline = bytes.lastIndex(of: 10) else { return [] }
        return String(decoding: bytes[...lastNewline], as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
