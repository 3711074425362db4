#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Dispatch
import LinuxIO
import Synchronization
import V4L2

/// Carries control values from the input thread to a thread of its own that makes the
/// ioctls, latest value per control winning: a camera that stops answering (uvcvideo waits
/// up to 5 s for a USB control transfer, per control) delays that thread only, never input.
/// Reads of the camera that follow a change made elsewhere run on the same thread
/// (``requestRefresh()``), after the values queued before them.
///
/// The handoff allocates nothing in the steady state: values go into a preallocated array
/// under a lock (a control's pending value replaced), and one 8-byte `write` to an eventfd
/// wakes the writer, which swaps the array with its own empty one.
final class ControlWriter: Sendable {
    private struct State {
        var pending: [(ControlID, Int64)] = []
        var stopped = false
        /// Submissions so far, and how many of them the writer has taken and written.
        var submitted = 0
        var written = 0
        /// A refresh asked for and not started yet (requests while one waits are one).
        var refreshRequested = false
        /// Reads asked for, answered after the values queued before them.
        var reads: [ReadRequest] = []
    }

    /// One value to read on the writer's thread; the asker waits for it a bounded time.
    private final class ReadRequest: Sendable {
        let id: ControlID
        let answered = DispatchSemaphore(value: 0)
        let value = Mutex<Int64?>(nil)
        init(_ id: ControlID) { self.id = id }
    }
    private let state: Mutex<State>
    private let wakeFD: Int32

    /// `write` runs on the writer's thread for each value, in submission order of controls;
    /// `read` there for ``read(_:timeout:)``, and `refresh`, after the values, once per
    /// ``requestRefresh()`` burst.
    init(
        write: @escaping @Sendable (ControlID, Int64) -> Void, read: @escaping @Sendable (ControlID) -> Int64? = { _ in nil },
        refresh: @escaping @Sendable () -> Void = {}
    ) {
        var s = State()
        s.pending.reserveCapacity(8)
        state = Mutex(s)
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC))
        precondition(wakeFD >= 0, "eventfd: \(errno)")
        // The thread holds the writer until stop() lets it end.
        startThread(name: "evc-controls") { [self] in run(write, read, refresh) }
    }

    private func run(
        _ write: @Sendable (ControlID, Int64) -> Void, _ readValue: @Sendable (ControlID) -> Int64?, _ refresh: @Sendable () -> Void
    ) {
        var batch: [(ControlID, Int64)] = []
        batch.reserveCapacity(8)
        while true {
            var value: UInt64 = 0
            let n = (try? retryingEINTR { withUnsafeMutableBytes(of: &value) { Glibc.read(wakeFD, $0.baseAddress, 8) } }) ?? -1
            let (stop, taken, refreshing, reads) = state.withLock { s -> (Bool, Int, Bool, [ReadRequest]) in
                swap(&s.pending, &batch)
                defer {
                    s.refreshRequested = false
                    s.reads = []
                }
                return (s.stopped, s.submitted, s.refreshRequested, s.reads)
            }
            for (id, v) in batch { write(id, v) }
            batch.removeAll(keepingCapacity: true)
            state.withLock { $0.written = max($0.written, taken) }
            for r in reads {
                let v = readValue(r.id)
                r.value.withLock { $0 = v }
                r.answered.signal()
            }
            if refreshing && !stop { refresh() }
            if stop || n <= 0 {
                close(wakeFD)
                return
            }
        }
    }

    /// Queues `value` for `id`, replacing a value still pending for it; returns at once.
    /// The replacement moves to the end: values are written in the order of their last
    /// submission, so the camera ends as it would after every set in turn (auto exposure
    /// back on after the exposure time it made inactive).
    func submit(_ id: ControlID, _ value: Int64) {
        state.withLock { s in
            s.submitted += 1
            if let i = s.pending.firstIndex(where: { $0.0 == id }) { s.pending.remove(at: i) }
            s.pending.append((id, value))
        }
        wake()
    }

    /// Asks for `refresh` on the writer's thread, after the values queued now; returns at once.
    func requestRefresh() {
        state.withLock { $0.refreshRequested = true }
        wake()
    }

    /// Reads `id` on the writer's thread, after the values queued now, waiting at most
    /// `timeout`: nil when the camera did not answer in time (the thread is held by a camera
    /// that stops answering) or the read failed. The read itself still happens later.
    func read(_ id: ControlID, timeout: Duration) -> Int64? {
        let request = ReadRequest(id)
        state.withLock { $0.reads.append(request) }
        wake()
        guard request.answered.wait(timeout: .now() + .nanoseconds(Int(timeout / .nanoseconds(1)))) == .success else { return nil }
        return request.value.withLock { $0 }
    }

    /// The values queued and not yet taken by the writer: newer than anything the camera
    /// can answer now (a refresh running on the writer's thread patches its read with them).
    var pendingValues: [ControlID: Int64] {
        state.withLock { Dictionary($0.pending, uniquingKeysWith: { _, last in last }) }
    }

    /// Whether everything submitted so far has been written.
    var isIdle: Bool { state.withLock { $0.written >= $0.submitted } }

    /// Ends the thread after the values pending now are written.
    func stop() {
        state.withLock { $0.stopped = true }
        wake()
    }

    private func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(wakeFD, $0.baseAddress, 8) }
    }
}
