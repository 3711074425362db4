// `SchedulingExecutor` (SE-0505, in review): since Swift 6.3 `Task.sleep` asks the current
// executor to schedule the wake-up, and only falls back to the default one (libdispatch's
// timers) when it cannot. Swift 6.2 has no such protocol: there every `Task.sleep` goes to the
// runtime's enqueue-with-delay hooks, which `install()` takes, so the wake-ups come to the same
// queue either way.
#if compiler(>=6.3)
@_spi(ExperimentalScheduling) import _Concurrency
#endif

import CConcurrencyHooks
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Runs every Swift Concurrency job that has no executor of its own — the global executor's
/// jobs, delayed jobs (`Task.sleep`) and the main actor's — on the process's main thread,
/// in order, and sleeps with no timer armed while nothing is due.
///
/// Why: on Linux the default global executor is libdispatch, whose worker pool, once a job
/// has run on it, keeps a 1 s timer on its manager thread for good (`workqueue.c`'s pool
/// monitor): a daemon that does nothing still wakes every second. This executor takes the
/// runtime's enqueue hooks (`swift_task_enqueueGlobal_hook` and friends, the ones
/// SwiftNIO's `unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`
/// takes), so no job reaches libdispatch and its threads are never started.
///
/// One thread, like the cooperative pool on a one-CPU machine: work that blocks belongs
/// on a thread of its own (`ThreadExecutor`, `IOLoop`), here as with the default executor.
///
/// Limits: `Task.sleep` is timed here when the sleeping task runs on this executor (every
/// task without an executor preference); a task on a custom task executor that is not a
/// `SchedulingExecutor` (a `ThreadExecutor`) still has its sleeps timed by libdispatch,
/// which starts its threads — keep sleeps off those. The main actor's jobs run here too,
/// but a main-actor `Task.sleep` is timed by libdispatch's main queue, which nothing drains
/// here: do not sleep on the main actor (evcapture has no main-actor code).
///
/// ```swift
/// @main enum Main {
///     static func main() { MainThreadExecutor.run { await Command.main() } }
/// }
/// ```
public enum MainThreadExecutor {
    /// Installs the executor, starts `body` as a task and runs jobs on the calling (main)
    /// thread until `body` returns, then exits the process with status 0 — like an async
    /// `main`. Call it first thing in a synchronous `main`, before any task exists: jobs
    /// enqueued before would stay with libdispatch.
    public static func run(_ body: @escaping @Sendable () async -> Void) -> Never {
        install()
        Task {
            await body()
            exit(0)
        }
        // Another hook was in place: jobs go wherever it sends them, and the main thread
        // serves libdispatch's main queue, as an async `main` does.
        guard installed else { dispatchMain() }
        JobQueue.shared.runLoop()
    }

    nonisolated(unsafe) private static var installed = false

    private typealias Enqueue = @convention(thin) (UnownedJob) -> Void
    private typealias EnqueueHook = @convention(thin) (UnownedJob, Enqueue) -> Void
    private typealias EnqueueDelayed = @convention(thin) (UInt64, UnownedJob) -> Void
    private typealias EnqueueDelayedHook = @convention(thin) (UInt64, UnownedJob, EnqueueDelayed) -> Void
    private typealias EnqueueDeadline = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob) -> Void
    private typealias EnqueueDeadlineHook =
        @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob, EnqueueDeadline) -> Void

    /// Sets the runtime's hooks (ConcurrencyHooks.def in the Swift repository). Called once,
    /// on the main thread, before any task exists.
    private static func install() {
        let global: EnqueueHook = { job, _ in JobQueue.shared.enqueue(job, main: false, at: nil) }
        let main: EnqueueHook = { job, _ in JobQueue.shared.enqueue(job, main: true, at: nil) }
        let delayed: EnqueueDelayedHook = { nanoseconds, job, _ in
            JobQueue.shared.enqueue(job, main: false, at: monotonicNanoseconds() &+ nanoseconds)
        }
        let deadline: EnqueueDeadlineHook = { seconds, nanoseconds, _, _, clock, job, _ in
            JobQueue.shared.enqueue(job, main: false, at: monotonicDeadline(seconds, nanoseconds, clock: clock))
        }
        // A thin function is one pointer, the C function pointer the runtime calls (swiftcall).
        installed =
            evc_install_concurrency_hooks(
                unsafeBitCast(global, to: UnsafeMutableRawPointer.self),
                unsafeBitCast(delayed, to: UnsafeMutableRawPointer.self),
                unsafeBitCast(deadline, to: UnsafeMutableRawPointer.self),
                unsafeBitCast(main, to: UnsafeMutableRawPointer.self)) != 0
    }
}

/// Now on CLOCK_MONOTONIC, the clock every timer of the queue is kept on.
private func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// A deadline of the runtime's clock `clock` (1: `ContinuousClock`, CLOCK_BOOTTIME on Linux;
/// 2: `SuspendingClock`, CLOCK_MONOTONIC) as a CLOCK_MONOTONIC time.
private func monotonicDeadline(_ seconds: Int64, _ nanoseconds: Int64, clock: Int32) -> UInt64 {
    let target = seconds &* 1_000_000_000 &+ nanoseconds
    var ts = timespec()
    clock_gettime(clock == 1 ? CLOCK_BOOTTIME : CLOCK_MONOTONIC, &ts)
    let remaining = max(0, target &- (Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)))
    return monotonicNanoseconds() &+ UInt64(remaining)
}

/// The jobs and timers, and the thread that runs them.
///
/// `@unchecked Sendable`: every field is read and written only with `mutex` held, except
/// `mutex` and `wake` themselves, which are made in `init`, never freed (the queue lives as
/// long as the process) and are what makes the rest safe.
private final class JobQueue: @unchecked Sendable {
    static let shared = JobQueue()

    private struct Entry {
        var job: UnownedJob
        var main: Bool
    }
    private struct Timer {
        var deadline: UInt64
        var sequence: UInt64
        var entry: Entry
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wake: UnsafeMutablePointer<pthread_cond_t>
    private var ready: [Entry] = []
    /// A binary min-heap on (deadline, sequence): equal deadlines run in enqueue order.
    private var timers: [Timer] = []
    private var sequence: UInt64 = 0
    /// The runner is in `pthread_cond_(timed)wait`: an enqueue must signal it.
    private var sleeping = false

    private init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        wake = .allocate(capacity: 1)
        pthread_cond_init(wake, &attributes)
        pthread_condattr_destroy(&attributes)
        ready.reserveCapacity(64)
        timers.reserveCapacity(16)
    }

    func enqueue(_ job: UnownedJob, main: Bool, at deadline: UInt64?) {
        pthread_mutex_lock(mutex)
        let entry = Entry(job: job, main: main)
        if let deadline {
            pushTimer(Timer(deadline: deadline, sequence: sequence, entry: entry))
            sequence &+= 1
        } else {
            ready.append(entry)
        }
        // Jobs enqueued by the runner itself (most of them: continuations) need no signal.
        let signal = sleeping
        pthread_mutex_unlock(mutex)
        if signal { pthread_cond_signal(wake) }
    }

    func runLoop() -> Never {
        let executor = GlobalTaskExecutor()
        let taskExecutor = executor.asUnownedTaskExecutor()
        let mainExecutor = MainActor.sharedUnownedExecutor
        var batch: [Entry] = []
        batch.reserveCapacity(64)
        // Batches run since the timers were last looked at. The clock is read only when
        // the queue runs dry and every 16 batches while it does not: a clock read can cost
        // tens of microseconds (a syscall and an emulated device under QEMU TCG), and a
        // busy queue runs a batch per wake-up of the I/O thread.
        var batchesSinceTimers = 0
        pthread_mutex_lock(mutex)
        while true {
            if !timers.isEmpty && (ready.isEmpty || batchesSinceTimers >= 16) {
                batchesSinceTimers = 0
                let now = monotonicNanoseconds()
                while let first = timers.first, first.deadline <= now { ready.append(popTimer().entry) }
            }
            if !ready.isEmpty {
                batchesSinceTimers += 1
                swap(&ready, &batch)
                pthread_mutex_unlock(mutex)
                for entry in batch {
                    if entry.main {
                        entry.job.runSynchronously(on: mainExecutor)
                    } else {
                        entry.job.runSynchronously(on: taskExecutor)
                    }
                }
                batch.removeAll(keepingCapacity: true)
                pthread_mutex_lock(mutex)
                continue
            }
            sleeping = true
            if let first = timers.first {
                var ts = timespec(
                    tv_sec: Int(first.deadline / 1_000_000_000), tv_nsec: Int(first.deadline % 1_000_000_000))
                pthread_cond_timedwait(wake, mutex, &ts)
            } else {
                pthread_cond_wait(wake, mutex)
            }
            sleeping = false
        }
    }

    private func pushTimer(_ timer: Timer) {
        timers.append(timer)
        var i = timers.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.before(timers[i], timers[parent]) else { break }
            timers.swapAt(i, parent)
            i = parent
        }
    }

    private func popTimer() -> Timer {
        let first = timers[0]
        let last = timers.removeLast()
        if !timers.isEmpty {
            timers[0] = last
            var i = 0
            while true {
                let left = 2 * i + 1, right = left + 1
                var smallest = i
                if left < timers.count && Self.before(timers[left], timers[smallest]) { smallest = left }
                if right < timers.count && Self.before(timers[right], timers[smallest]) { smallest = right }
                if smallest == i { break }
                timers.swapAt(i, smallest)
                i = smallest
            }
        }
        return first
    }

    private static func before(_ a: Timer, _ b: Timer) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }
}

/// The task executor global jobs run on (what `runSynchronously(on:)` needs). Jobs given
/// to it directly — a task created with it as its executor preference — go to the same
/// queue as every global job.
///
/// It is also what schedules `Task.sleep` wake-ups: the runtime asks the executor a job runs
/// on. Instants of any clock are turned into a delay from that clock's `now`, then timed on
/// CLOCK_MONOTONIC — so a `ContinuousClock` sleep does not count time the machine spent
/// suspended, which a daemon's deadlines do not need.
private final class GlobalTaskExecutor: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        JobQueue.shared.enqueue(UnownedJob(job), main: false, at: nil)
    }
}

#if compiler(>=6.3)
extension GlobalTaskExecutor: SchedulingExecutor {
    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        enqueue(job, after: clock.now.duration(to: instant), tolerance: tolerance, clock: clock)
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        guard let delay = delay as? Duration else {
            fatalError("MainThreadExecutor: cannot time a delay of type \(C.Duration.self)")
        }
        let (seconds, attoseconds) = delay.components
        let nanoseconds = seconds < 0 ? 0 : UInt64(seconds) &* 1_000_000_000 &+ UInt64(max(0, attoseconds) / 1_000_000_000)
        JobQueue.shared.enqueue(UnownedJob(job), main: false, at: monotonicNanoseconds() &+ nanoseconds)
    }
}
#endif
