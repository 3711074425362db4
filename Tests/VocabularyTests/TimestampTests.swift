import Vocabulary
import Testing

/// `Timestamp`, the one type of a CLOCK_MONOTONIC instant, and its one conversion to and
/// from the wall clock.
struct TimestampTests {
    @Test func durationsMoveItBothWaysToTheMicrosecond() {
        let t = Timestamp(microseconds: 5_000_000)
        #expect(t + .milliseconds(250) == Timestamp(microseconds: 5_250_000))
        #expect(t - .milliseconds(250) == Timestamp(microseconds: 4_750_000))
        #expect(t - .seconds(6) == Timestamp(microseconds: -1_000_000))
        #expect(t - .nanoseconds(999) == t, "below a microsecond is dropped, as the kernel's µs are")
        let earlier: Timestamp = t - .seconds(2)
        let back: Duration = earlier - t
        #expect(back == .seconds(-2))
    }

    @Test func wallTimeRoundTripsThroughTheMonotonicClock() {
        let now = monotonicNow()
        let wall = now.wallSeconds
        #expect(wall > 1_600_000_000, "seconds since 1970: \(wall)")
        // Each conversion reads both clocks once; the two reads lie microseconds apart.
        let back = Timestamp(wallSeconds: wall)
        #expect(abs(back.microseconds - now.microseconds) < 10_000, "\(back) from \(now)")
        // An hour earlier on the wall is an hour earlier on the monotonic clock.
        let earlier = Timestamp(wallSeconds: wall - 3600)
        #expect(abs((now - earlier) / .seconds(1) - 3600) < 0.01)
    }
}
