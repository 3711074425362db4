#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Synchronization

/// Runs `body` on a new detached thread named `name` (its first 15 bytes: the kernel's
/// limit), outside Swift's cooperative pool: for work that blocks.
public func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
    final class Start: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
    }
    let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            nameThisThread(start.name)
            start.body()
            return nil
        }, context)
    precondition(rc == 0, "pthread_create: \(rc)")
    pthread_detach(thread)
}

/// Names the calling thread `name` (its first 15 bytes), as `ps -L`, `top -H` and
/// `/proc/PID/task/TID/comm` show it: for a thread another library started, such as
/// SwiftNIO's event loop (docs/architecture.md#threads).
public func nameThisThread(_ name: String) {
    _ = evc_set_thread_name(name)
}

/// Gives the calling thread only the CPU time no other thread wants: Linux's `SCHED_IDLE`
/// policy (threads it starts inherit it, as libx264's do). A thread of the normal class that
/// wakes (input, controls, photos) takes the CPU from it at once instead of sharing it by
/// weight as a nice value would. For bulk work that may fall behind (a recording skips frames
/// and counts them). One-way: leaving the policy needs privileges. Where the policy is refused
/// (a seccomp filter that blocks `sched_setscheduler`), the thread gets nice 19 instead.
/// Returns the policy the thread runs under.
@discardableResult
public func lowerCurrentThreadPriority() -> ThreadPolicy {
    if evc_set_thread_idle_policy() == 0 { return .idle }
    // PRIO_PROCESS with 0: the calling thread only (Linux keeps a nice value per thread).
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
    return .nice19
}

/// The scheduling a thread was given by ``lowerCurrentThreadPriority()``.
public enum ThreadPolicy: Sendable, Hashable {
    /// `SCHED_IDLE`.
    case idle
    /// The normal policy at nice 19 (`SCHED_IDLE` was refused).
    case nice19
}

/// Whether the calling thread runs under `SCHED_IDLE`.
var currentThreadIsIdlePolicy: Bool { evc_thread_policy() == 5 }

/// Runs blocking work (ioctls, poll, file writes, waitpid) on a thread of its own, outside
/// Swift's cooperative pool, and awaits its result.
public func onDedicatedThread<T: Sendable>(name: String, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        startThread(name: name) { continuation.resume(returning: body()) }
    }
}

/// A value set once and awaited by any number of tasks.
public final class OneShot<T: Sendable>: Sendable {
    private struct State {
        var value: T?
        var waiters: [CheckedContinuation<T, Never>] = []
    }
    private let state = Mutex(State())

    public init() {}

    /// Sets the value (the first call wins) and wakes every waiter.
    public func fulfil(_ value: T) {
        let waiters = state.withLock { s -> [CheckedContinuation<T, Never>] in
            guard s.value == nil else { return [] }
            s.value = value
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for w in waiters { w.resume(returning: value) }
    }

    public var current: T? { state.withLock { $0.value } }

    public func value() async -> T {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { s -> T? in
                if let v = s.value { return v }
                s.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Gives back to the kernel the memory glibc's allocator keeps free in its arenas
/// (`malloc_trim(3)`): after a burst of short-lived buffers (many clients that left), so
/// the process's private memory returns to what it was before them.
public func returnFreedMemory() {
    _ = malloc_trim(0)
}
