/// A kernel timestamp (`input_event.time`): seconds and microseconds.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Microseconds since the clock's epoch (CLOCK_MONOTONIC for live devices once set,
    /// the recording's start for evemu files).
    public var microseconds: Int64
    public init(microseconds: Int64) { self.microseconds = microseconds }
    public init(seconds: Int, microseconds usec: Int) { microseconds = Int64(seconds) * 1_000_000 + Int64(usec) }
    public var seconds: Double { Double(microseconds) / 1_000_000 }
    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.microseconds < b.microseconds }
    public static func + (a: Timestamp, d: Duration) -> Timestamp {
        let (s, atto) = d.components
        return Timestamp(microseconds: a.microseconds + s * 1_000_000 + atto / 1_000_000_000_000)
    }
    public static func - (a: Timestamp, d: Duration) -> Timestamp { a + (.zero - d) }
    public static func - (a: Timestamp, b: Timestamp) -> Duration { .microseconds(a.microseconds - b.microseconds) }
    public var description: String {
        let s = microseconds / 1_000_000, us = Swift.abs(microseconds % 1_000_000)
        let frac = String(us)
        return "\(s).\(String(repeating: "0", count: 6 - frac.count))\(frac)"
    }
}

/// The current CLOCK_MONOTONIC time: the clock evdev devices are switched to, so kernel
/// event times and deadlines compare directly.
public func monotonicNow() -> Timestamp {
    Timestamp(microseconds: monotonicMicroseconds())
}

// The one conversion between CLOCK_MONOTONIC and wall-clock time: wall time only where a
// person or another station reads it (file names, EXIF, MP4 creation time, trigger messages).
extension Timestamp {
    /// The CLOCK_MONOTONIC time of a wall-clock time (seconds since 1970).
    public init(wallSeconds seconds: Double) {
        self.init(microseconds: monotonicNow().microseconds - Int64(((wallClockNow() - seconds) * 1_000_000).rounded()))
    }

    /// The wall-clock time (seconds since 1970) of this CLOCK_MONOTONIC time.
    public var wallSeconds: Double {
        wallClockNow() - Double(monotonicNow().microseconds - microseconds) / 1_000_000
    }
}
