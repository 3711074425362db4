#if canImport(Glibc)
import Glibc
#endif
import LinuxIO
import Synchronization

/// The thread behind a stream made only while someone watches (the live view's preview, the
/// live H.264): the first ``start(feed:)`` spawns it and ``stop()`` lets it end. While it is
/// wanted it takes the capture stream (looked for again every half second while there is
/// none), counts itself a viewer of it (``FrameSource/addViewer()``) and runs `feed`, which
/// returns when nobody watches (``isWanted``) or the camera changed or failed.
public final class WatchedFeed: Sendable {
    private struct State {
        var wanted = false
        var running = false
    }
    private let state = Mutex(State())
    private let threadName: String
    private let source: @Sendable () -> FrameSource?

    public init(threadName: String, source: @escaping @Sendable () -> FrameSource?) {
        self.threadName = threadName
        self.source = source
    }

    /// Whether anyone watches: a feed's loop ends when this turns false.
    public var isWanted: Bool { state.withLock { $0.wanted } }

    /// The first viewer came (a thread already running carries on).
    public func start(feed: @escaping @Sendable (FrameSource) -> Void) {
        let spawn = state.withLock { s -> Bool in
            s.wanted = true
            defer { s.running = true }
            return !s.running
        }
        if spawn { startThread(name: threadName) { [self] in run(feed) } }
    }

    /// The last viewer left: the thread ends after the frame it waits for.
    public func stop() { state.withLock { $0.wanted = false } }

    private func run(_ feed: @Sendable (FrameSource) -> Void) {
        while true {
            while isWanted {
                guard let frames = source() else {
                    // No camera yet: look again soon (only while someone watches).
                    usleep(500_000)
                    continue
                }
                frames.addViewer()
                feed(frames)
                frames.removeViewer()
            }
            // A viewer may have come back between the loop's last look and now.
            let done = state.withLock { s -> Bool in
                if s.wanted { return false }
                s.running = false
                return true
            }
            if done { return }
        }
    }
}
