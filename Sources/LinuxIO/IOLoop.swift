#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Dispatch
import Synchronization

/// What epoll reported for a watched file descriptor.
public struct Readiness: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// EPOLLIN: data (or an error) is waiting.
    public static let readable = Readiness(rawValue: UInt32(EPOLLIN.rawValue))
    /// EPOLLOUT: a write would not block (a socket whose connect finished, a drained send buffer).
    public static let writable = Readiness(rawValue: UInt32(EPOLLOUT.rawValue))
    /// EPOLLPRI: V4L2 reports pending events this way.
    public static let priority = Readiness(rawValue: UInt32(EPOLLPRI.rawValue))
    /// EPOLLHUP: the other end is gone (an unplugged evdev node).
    public static let hangup = Readiness(rawValue: UInt32(EPOLLHUP.rawValue))
    /// EPOLLERR.
    public static let error = Readiness(rawValue: UInt32(EPOLLERR.rawValue))
}

/// A registration handle returned by ``IOLoop/register(fd:interest:handler:onRemove:)``.
public struct IOToken: Hashable, Sendable {
    fileprivate let id: UInt64
}

/// One thread waiting in `epoll_wait` on every file descriptor the daemon watches, plus an
/// eventfd that wakes it for commands and for ``stop()``.
///
/// Handlers run on that thread, one at a time, and must not block: they read what is
/// ready and act on it or hand it on. While nothing happens the thread sleeps in
/// `epoll_wait` with no timeout: no periodic wakeups.
///
/// The loop is also a `SerialExecutor`: an actor whose `unownedExecutor` is the loop runs
/// on the I/O thread, and a handler may enter it synchronously with `assumeIsolated`
/// (the input path: read → actor state, no thread hop). ``IOTimer`` adds deadlines on the
/// same thread (timerfd).
///
/// Removal happens on the I/O thread: ``remove(_:)`` queues the request, the thread drops
/// the handler and then calls its `onRemove` (which closes the fd). So a handler never runs
/// against a closed or reused descriptor.
public final class IOLoop: Sendable {
    private struct Entry {
        var fd: Int32
        var handler: @Sendable (Readiness) -> Void
        var onRemove: @Sendable () -> Void
    }
    private struct State {
        var entries: [UInt64: Entry] = [:]
        var pendingRemovals: [UInt64] = []
        var nextID: UInt64 = 1
        var stopping = false
        /// Jobs of actors (and tasks) that run on this loop, in enqueue order.
        var jobs: [UnownedJob] = []
    }

    /// Internal for tests (a failing `epoll_wait`).
    let epfd: Int32
    private let wakefd: Int32
    private let state = Mutex(State())
    /// Whether the thread runs and nobody waited for its end yet; `finished` is signalled
    /// when it ends (the thread is started detached, by ``startThread(name:_:)``).
    private let running = Mutex(true)
    private let finished = DispatchSemaphore(value: 0)
    private let threadID = Atomic<UInt64>(0)
    private let wakeups = Atomic<Int>(0)

    /// How many times the loop's thread has returned from `epoll_wait`: a loop that spins
    /// shows it here, whatever else the process does (tests, diagnostics).
    var wakeupCount: Int { wakeups.load(ordering: .relaxed) }

    /// `name`: the thread's, after what it serves (`evc-input`, `evc-booth`; 15 bytes show in
    /// `ps -L` and `top -H`).
    public init(name: String = "evc-io") throws(SystemError) {
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard ep >= 0 else { throw SystemError(errno: errno, context: "epoll_create1") }
        let ev = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard ev >= 0 else {
            let e = errno
            close(ep)
            throw SystemError(errno: e, context: "eventfd")
        }
        epfd = ep
        wakefd = ev
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = 0  // id 0 is the wake eventfd
        guard epoll_ctl(epfd, EPOLL_CTL_ADD, wakefd, &event) == 0 else {
            let e = errno
            close(ep); close(ev)
            throw SystemError(errno: e, context: "epoll_ctl(ADD eventfd)")
        }
        // The thread keeps the loop alive until run() returns.
        startThread(name: name) { [self] in
            run()
            finished.signal()
        }
    }

    deinit {
        close(epfd)
        close(wakefd)
    }

    /// True when called from the I/O thread (inside a handler).
    public var isCurrent: Bool { threadID.load(ordering: .acquiring) == UInt64(pthread_self()) }

    /// Watches `fd`. `handler` runs on the I/O thread whenever epoll reports `interest` (and
    /// always on hangup/error). `onRemove` runs on the I/O thread after the last handler call,
    /// when the registration is removed or the loop stops; it owns closing `fd`.
    @discardableResult
    public func register(
        fd: Int32, interest: Readiness = .readable,
        handler: @escaping @Sendable (Readiness) -> Void,
        onRemove: @escaping @Sendable () -> Void = {}
    ) throws(SystemError) -> IOToken {
        let id: UInt64 = state.withLock { s in
            defer { s.nextID += 1 }
            s.entries[s.nextID] = Entry(fd: fd, handler: handler, onRemove: onRemove)
            return s.nextID
        }
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = id
        if epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) != 0 {
            let e = errno
            _ = state.withLock { $0.entries.removeValue(forKey: id) }
            throw SystemError(errno: e, context: "epoll_ctl(ADD fd \(fd))")
        }
        return IOToken(id: id)
    }

    /// Changes what a registration waits for (e.g. adds `.writable` while output is queued
    /// on a socket, and drops it once written, so a writable socket does not wake the loop).
    public func setInterest(_ token: IOToken, _ interest: Readiness) throws(SystemError) {
        guard let fd = state.withLock({ $0.entries[token.id]?.fd }) else { return }
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = token.id
        if epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event) != 0 {
            throw SystemError(errno: errno, context: "epoll_ctl(MOD fd \(fd))")
        }
    }

    /// Stops watching; the handler is not called again, then `onRemove` runs on the I/O thread.
    public func remove(_ token: IOToken) {
        if isCurrent {
            removeNow(token.id)
        } else {
            state.withLock { $0.pendingRemovals.append(token.id) }
            wake()
        }
    }

    /// Ends the thread: every registration's `onRemove` runs, then the thread exits.
    /// Waits for it unless called from the I/O thread itself.
    public func stop() {
        state.withLock { $0.stopping = true }
        wake()
        if isCurrent { return }
        if running.withLock({ r in
            defer { r = false }; return r
        }) {
            finished.wait()
        }
    }

    /// Runs the jobs enqueued so far (on the I/O thread), including any they enqueue.
    private func runJobs(_ batch: inout [UnownedJob]) {
        while true {
            state.withLock { swap(&$0.jobs, &batch) }
            if batch.isEmpty { return }
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
            batch.removeAll(keepingCapacity: true)
        }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wakefd, $0.baseAddress, 8) }
    }

    private func removeNow(_ id: UInt64) {
        guard let entry = state.withLock({ $0.entries.removeValue(forKey: id) }) else { return }
        _ = epoll_ctl(epfd, EPOLL_CTL_DEL, entry.fd, nil)
        entry.onRemove()
    }

    private func run() {
        threadID.store(UInt64(pthread_self()), ordering: .releasing)
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        var jobs: [UnownedJob] = []
        jobs.reserveCapacity(16)
        while true {
            let n: Int32
            do {
                n = try retryingEINTR { events.withUnsafeMutableBufferPointer { epoll_wait(epfd, $0.baseAddress!, 64, -1) } }
            } catch {
                // Only a bug makes epoll_wait on our own descriptor fail (EBADF, EINVAL): say so
                // loudly rather than end the thread and leave every later job waiting.
                preconditionFailure("the I/O loop's epoll_wait failed: \(error.doing("epoll_wait"))")
            }
            wakeups.add(1, ordering: .relaxed)
            for i in 0..<Int(n) {
                let id = events[i].data.u64
                if id == 0 {
                    var value: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &value) { read(wakefd, $0.baseAddress, 8) }
                    continue
                }
                // Looked up per event: a handler earlier in this batch may have removed it.
                guard let handler = state.withLock({ $0.entries[id]?.handler }) else { continue }
                handler(Readiness(rawValue: events[i].events))
            }
            let (removals, stopping) = state.withLock { s -> ([UInt64], Bool) in
                defer { s.pendingRemovals.removeAll() }
                return (s.pendingRemovals, s.stopping)
            }
            for id in removals { removeNow(id) }
            runJobs(&jobs)
            if stopping { break }
        }
        let all = state.withLock { s -> [UInt64] in Array(s.entries.keys) }
        for id in all { removeNow(id) }
    }
}

extension IOLoop: SerialExecutor {
    /// Queues a job for the I/O thread; it runs after the handlers of the current epoll
    /// round. Jobs enqueued after ``stop()`` never run.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        state.withLock { $0.jobs.append(unowned) }
        if !isCurrent { wake() }
    }

    public func checkIsolated() {
        precondition(isCurrent, "not on the IOLoop thread")
    }

    public func isIsolatingCurrentContext() -> Bool? { isCurrent }
}

/// A deadline on an ``IOLoop`` thread: a `timerfd` on CLOCK_MONOTONIC, armed for one
/// absolute time at a time. Its handler runs on the I/O thread; while disarmed it costs
/// nothing and wakes nothing.
public final class IOTimer: Sendable {
    /// Internal for tests. Touched only while `open` says it is: the loop closes it on its own
    /// thread after ``cancel()``, and the number may then belong to another descriptor.
    let fd: Int32
    /// False once the loop closed `fd`; held while arming so the close waits for it.
    private let open: OpenFlag
    private final class OpenFlag: Sendable { let value = Mutex(true) }
    private let token: IOToken
    private let loop: IOLoop

    /// Creates a disarmed timer whose `handler` runs on `loop`'s thread when it fires.
    public init(loop: IOLoop, handler: @escaping @Sendable () -> Void) throws(SystemError) {
        let fd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard fd >= 0 else { throw SystemError(errno: errno, context: "timerfd_create") }
        let open = OpenFlag()
        do {
            token = try loop.register(
                fd: fd,
                handler: { _ in
                    var expirations: UInt64 = 0
                    // EAGAIN: re-armed or disarmed since epoll saw it fire; not a deadline.
                    let n = withUnsafeMutableBytes(of: &expirations) { read(fd, $0.baseAddress, 8) }
                    if n == 8 { handler() }
                },
                onRemove: {
                    open.value.withLock { isOpen in
                        isOpen = false
                        close(fd)
                    }
                })
        } catch {
            close(fd)
            throw error
        }
        self.fd = fd
        self.open = open
        self.loop = loop
    }

    /// Fires once at `microseconds` of CLOCK_MONOTONIC (at once if that has passed), or
    /// never (`nil`). Replaces the previous deadline. After ``cancel()`` it does nothing.
    public func arm(atMonotonicMicroseconds microseconds: Int64?) {
        var spec = itimerspec()
        if let microseconds {
            // 0 would disarm: a deadline at the clock's origin is long past, fire now.
            let t = max(microseconds, 1)
            spec.it_value.tv_sec = Int(t / 1_000_000)
            spec.it_value.tv_nsec = Int(t % 1_000_000) * 1000
        }
        open.value.withLock { isOpen in
            if isOpen { _ = timerfd_settime(fd, Int32(TFD_TIMER_ABSTIME), &spec, nil) }
        }
    }

    /// Stops watching and closes the timer (on the I/O thread).
    public func cancel() {
        arm(atMonotonicMicroseconds: nil)
        loop.remove(token)
    }
}
