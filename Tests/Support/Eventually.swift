#if canImport(Glibc)
import Glibc
#endif

/// Polls `condition` every 10 ms until it holds or `seconds` pass; returns its last value.
/// For results of work on other threads, never for timing.
public func eventually(seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Like ``eventually(seconds:_:)`` for synchronous code: polls every 10 ms, blocking the thread.
public func pollUntil(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
