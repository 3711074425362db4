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

/// The one synchronous poll of the tests, unit and system alike: evaluates `condition`
/// every `interval` until it holds (true) or `timeout` passes (its last value), blocking the
/// thread. For results of work on other threads or processes, never for timing. Emulated
/// kernels are slow: in the system tests use timeouts of seconds, not milliseconds.
public func pollUntil(
    timeout: Duration = .seconds(5), every interval: Duration = .milliseconds(20), _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    let micros = useconds_t(interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        usleep(micros)
    }
}
