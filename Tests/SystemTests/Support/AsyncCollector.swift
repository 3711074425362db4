import Synchronization

/// Collects what an async sequence delivers, on a task of its own, so that a test can wait
/// for an element with a timeout instead of blocking on the sequence (emulation is slow:
/// waits are seconds long, polled every 50 ms).
///
/// Stops when the sequence ends, on ``cancel()``, or when the collector is released.
final class AsyncCollector<Element: Sendable>: Sendable {
    /// The elements, shared with the collecting task (which must not keep the collector alive).
    private final class Storage: Sendable {
        let items = Mutex<[Element]>([])
    }
    private let storage = Storage()
    private let task: Task<Void, Never>

    init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let storage = storage
        task = Task {
            do {
                for try await element in sequence { storage.items.withLock { $0.append(element) } }
            } catch {}
        }
    }

    deinit { task.cancel() }

    /// Everything delivered so far, in order.
    var all: [Element] { storage.items.withLock { $0 } }

    /// The first element at or after index `start` that satisfies `predicate`, with its
    /// index; waits up to `timeout` for it, nil when none came.
    func first(
        after start: Int = 0, timeout: Duration = .seconds(15), where predicate: (Element) -> Bool
    ) async -> (index: Int, element: Element)? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let snapshot = all
            if start < snapshot.count, let i = snapshot[start...].firstIndex(where: predicate) { return (i, snapshot[i]) }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Stops collecting; what was collected stays.
    func cancel() { task.cancel() }
}
