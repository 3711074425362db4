import Dispatch
import Synchronization

/// Whether a live view viewer can take a frame now (docs/live-view.md#frames): the
/// preview is encoded only then. A viewer whose socket is full holds the newest frame it was
/// given; while every viewer is so (clients that stopped reading, a link that stalled), the
/// feed encodes nothing and waits here, and the first viewer that can take a frame again gets
/// the camera's newest, encoded for it, instead of the one it held.
final class ViewerDemand: Sendable {
    private let ready = Atomic<Int>(0)
    private let paused = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)

    /// On the server's loop: how many viewers can take a frame now.
    func set(ready count: Int) {
        let before = ready.exchange(count, ordering: .sequentiallyConsistent)
        if before == 0 && count > 0 { wake.signal() }
    }

    /// Whether any viewer can take a frame now.
    var anyReady: Bool { ready.load(ordering: .sequentiallyConsistent) > 0 }

    /// Whether the feed has left the camera's frames unencoded since its last one: a frame a
    /// viewer holds is then older than the newest.
    var isPaused: Bool { paused.load(ordering: .sequentiallyConsistent) }

    /// From the feed, when nobody can take the frame it has: it is paused until a viewer can
    /// (at most `timeout`, so that it sees when nobody watches any more).
    func pause(waitingAtMost timeout: Duration) {
        paused.store(true, ordering: .sequentiallyConsistent)
        guard !anyReady else { return }
        _ = wake.wait(timeout: .now() + .nanoseconds(Int(timeout / .nanoseconds(1))))
    }

    /// From the feed, before it hands out a frame.
    func resume() { paused.store(false, ordering: .sequentiallyConsistent) }
}
