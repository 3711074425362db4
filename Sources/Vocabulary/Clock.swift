#if canImport(Glibc)
import Glibc
#endif

// The clocks (docs/architecture.md#errors-and-habits): CLOCK_MONOTONIC, read here once
// (`monotonicNow()` gives it as a `Timestamp`), and the wall clock.

/// CLOCK_MONOTONIC in microseconds: the clock of evdev events, V4L2 buffers and `IOTimer`.
public func monotonicMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// Seconds since 1970, for file names and `EVCAPTURE_TIME`.
public func wallClockNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
