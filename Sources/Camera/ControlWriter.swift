#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
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
    }
    private let state: Mutex<State>
    private let wakeFD: Int32

    /// `write` runs on the writer's thread for each value, in submission order of controls;
    /// `refresh` there too, after the values, once per ``requestRefresh()`` burst.
    init(write: @escaping @Sendable (ControlID, Int64) -> Void, refresh: @escaping @Sendable () -> Void = {}) {
        var s = State()
        s.pending.reserveCapacity(8)
        state = Mutex(s)
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC))
        precondition(wakeFD >= 0, "eventfd: \(errno)")
        // The thread holds the writer until stop() lets it end.
        startThread(name: "evc-controls") { [self] in run(write, refresh) }
    }

    private func run(_ write: @Sendable (ControlID, Int64) -> Void, _ refresh: @Sendable () -> Void) {
        var batch: [(ControlID, Int64)] = []
        batch.reserveCapacity(8)
        while true {
            var value: UInt64 = 0
            let n = withUnsafeMutableBytes(of: &value) { read(wakeFD, $0.baseAddress, 8) }
            if n < 0 && errno == EINTR { continue }
            let (stop, taken, refreshing) = state.withLock { s -> (Bool, Int, Bool) in
                swap(&s.pending, &batch)
                defer { s.refreshRequested = false }
                return (s.stopped, s.submitted, s.refreshRequested)
            }
            for (id, v) in batch { write(id, v) }
            batch.removeAll(keepingCapacity: true)
            state.withLock { $0.written = max($0.written, taken) }
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
