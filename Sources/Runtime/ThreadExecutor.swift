import Dispatch
import LinuxIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A task executor with one thread of its own: for a capture handler's queue, and for work
/// that blocks (a V4L2 frame wait, a child process) and so must not sit on one of the few
/// threads of Swift's cooperative pool, where it would delay everything else — the input
/// pipeline included.
///
/// Enqueueing a job appends to a preallocated array under a lock and signals a semaphore:
/// no allocation, unlike handing a job to the global executor.
public final class ThreadExecutor: TaskExecutor {
    private struct State {
        var jobs: [UnownedJob] = []
        var stopped = false
    }
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)

    /// `name`: the thread's, after what it serves (`evc-photos`, `evc-primary`; 15 bytes
    /// show in `ps -L` and `top -H`).
    public init(name: String) {
        var s = State()
        s.jobs.reserveCapacity(16)
        state = Mutex(s)
        // The thread keeps the executor alive until `stop()` lets its loop end.
        startThread(name: name) { [self] in loop() }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        state.withLock { $0.jobs.append(unowned) }
        wake.signal()
    }

    /// Ends the thread once the jobs queued so far have run.
    public func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    private func loop() {
        var batch: [UnownedJob] = []
        batch.reserveCapacity(16)
        while true {
            wake.wait()
            let stopped = state.withLock { s -> Bool in
                swap(&s.jobs, &batch)
                return s.stopped
            }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            batch.removeAll(keepingCapacity: true)
            if stopped && state.withLock({ $0.jobs.isEmpty }) { return }
        }
    }
}
