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
