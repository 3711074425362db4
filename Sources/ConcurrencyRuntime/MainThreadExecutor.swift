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
            JobQueue.shared.enqueue(job, main: false, at: RuntimeTime.deadline(after: nanoseconds, now: monotonicNanoseconds()))
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
private func monotonicNanoseconds() -> UInt64 { clockNanoseconds(CLOCK_MONOTONIC) }

private func clockNanoseconds(_ clock: clockid_t) -> UInt64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// A deadline of the runtime's clock `clock` as a CLOCK_MONOTONIC time.
private func monotonicDeadline(_ seconds: Int64, _ nanoseconds: Int64, clock: Int32) -> UInt64 {
    let now = clockNanoseconds(RuntimeTime.systemClock(ofRuntimeClock: clock))
    let remaining = RuntimeTime.remaining(until: RuntimeTime.nanoseconds(seconds, nanoseconds), now: now)
    return RuntimeTime.deadline(after: remaining, now: monotonicNanoseconds())
}

/// The queue's arithmetic of time, apart from the clock reads so that tests can give it any
/// instant. Every sum saturates: a sleep of `UInt64.max` nanoseconds (`Task.sleep(nanoseconds:
/// .max)`, a common "until cancelled") or of centuries is a deadline that never comes, not
/// one that wrapped around into the past and fires at once.
enum RuntimeTime {
    /// The system clock of the runtime's clock number: 1, `ContinuousClock`, is
    /// CLOCK_BOOTTIME on Linux; 2, `SuspendingClock`, is CLOCK_MONOTONIC.
    static func systemClock(ofRuntimeClock clock: Int32) -> clockid_t { clock == 1 ? CLOCK_BOOTTIME : CLOCK_MONOTONIC }

    /// `seconds` and `nanoseconds` as nanoseconds; 0 before the clock's start, `UInt64.max`
    /// beyond what 64 bits hold.
    static func nanoseconds(_ seconds: Int64, _ nanoseconds: Int64) -> UInt64 {
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        return nanoseconds >= 0 ? whole.addingSaturated(UInt64(nanoseconds)) : whole.subtractingSaturated(UInt64(-nanoseconds))
    }

    /// How long from `now` until `target` (both on one clock): 0 once it has passed.
    static func remaining(until target: UInt64, now: UInt64) -> UInt64 { target.subtractingSaturated(now) }

    /// The deadline `nanoseconds` after `now`.
    static func deadline(after nanoseconds: UInt64, now: UInt64) -> UInt64 { now.addingSaturated(nanoseconds) }

    /// A delay as nanoseconds, its fraction of a nanosecond dropped: 0 for none or a negative
    /// one, `UInt64.max` beyond what 64 bits hold.
    static func nanoseconds(of delay: Duration) -> UInt64 {
        let (seconds, attoseconds) = delay.components
        guard delay > .zero else { return 0 }
        return nanoseconds(seconds, attoseconds / 1_000_000_000)
    }

    /// The timers are looked at (and the clock read) when nothing else is ready to run, and
    /// every this many batches while jobs keep coming: a clock read can cost tens of
    /// microseconds (a syscall and an emulated device under QEMU TCG), and a busy queue runs
    /// a batch per wake-up of the I/O thread.
    static let batchesBetweenTimerLooks = 16

    /// Whether the runner looks at its timers before its next batch.
    static func looksAtTimers(hasTimers: Bool, hasReadyJobs: Bool, batchesSinceLook: Int) -> Bool {
        hasTimers && (!hasReadyJobs || batchesSinceLook >= batchesBetweenTimerLooks)
    }
}

/// Elements by deadline, the earliest first: a binary min-heap on (deadline, sequence), so
/// that equal deadlines come out in the order they went in.
struct DeadlineHeap<Element> {
    private struct Entry {
        var deadline: UInt64
        var sequence: UInt64
        var element: Element
    }
    private var entries: [Entry] = []
    private var sequence: UInt64 = 0

    init(capacity: Int = 0) { entries.reserveCapacity(capacity) }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    /// The earliest deadline.
    var first: UInt64? { entries.first?.deadline }

    mutating func push(_ element: Element, at deadline: UInt64) {
        entries.append(Entry(deadline: deadline, sequence: sequence, element: element))
        sequence &+= 1
        var i = entries.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.before(entries[i], entries[parent]) else { break }
            entries.swapAt(i, parent)
            i = parent
        }
    }

    /// The earliest element if its deadline is at or before `now`.
    mutating func popDue(now: UInt64) -> Element? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var i = 0
            while true {
                let left = 2 * i + 1, right = left + 1
                var smallest = i
                if left < entries.count && Self.before(entries[left], entries[smallest]) { smallest = left }
                if right < entries.count && Self.before(entries[right], entries[smallest]) { smallest = right }
                if smallest == i { break }
                entries.swapAt(i, smallest)
                i = smallest
            }
        }
        return first.element
    }

    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }
}

extension UInt64 {
    fileprivate func addingSaturated(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    fileprivate func subtractingSaturated(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
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

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wake: UnsafeMutablePointer<pthread_cond_t>
    private var ready: [Entry] = []
    /// Equal deadlines run in enqueue order.
    private var timers = DeadlineHeap<Entry>(capacity: 16)
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
    }

    func enqueue(_ job: UnownedJob, main: Bool, at deadline: UInt64?) {
        pthread_mutex_lock(mutex)
        let entry = Entry(job: job, main: main)
        if let deadline {
            timers.push(entry, at: deadline)
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
        // Batches run since the timers were last looked at (RuntimeTime.looksAtTimers).
        var batchesSinceTimers = 0
        pthread_mutex_lock(mutex)
        while true {
            if RuntimeTime.looksAtTimers(hasTimers: !timers.isEmpty, hasReadyJobs: !ready.isEmpty, batchesSinceLook: batchesSinceTimers) {
                batchesSinceTimers = 0
                let now = monotonicNanoseconds()
                while let entry = timers.popDue(now: now) { ready.append(entry) }
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
                var ts = timespec(tv_sec: Int(first / 1_000_000_000), tv_nsec: Int(first % 1_000_000_000))
                pthread_cond_timedwait(wake, mutex, &ts)
            } else {
                pthread_cond_wait(wake, mutex)
            }
            sleeping = false
        }
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
        let deadline = RuntimeTime.deadline(after: RuntimeTime.nanoseconds(of: delay), now: monotonicNanoseconds())
        JobQueue.shared.enqueue(UnownedJob(job), main: false, at: deadline)
    }
}
#endif
