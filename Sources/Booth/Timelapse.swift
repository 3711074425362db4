/// A timelapse's schedule (docs/booth.md#timelapse): the nth shot (from 0) is due at
/// `start + n × interval`, whatever happened to the ones before, so the shots never drift.
/// Pure: the driver asks what is due at the time it wakes.
public struct TimelapseSchedule: Sendable, Hashable {
    /// Intervals allowed: 0.1 s to one day.
    public static let intervalRange: ClosedRange<Int64> = 100_000...86_400_000_000

    public let start: Int64
    /// µs between shots.
    public let interval: Int64
    /// The next shot's number.
    public private(set) var next = 0
    /// Shots taken (a frame saved).
    public private(set) var taken = 0
    /// Shots missed (no frame for them: the camera was gone, the ring had nothing near).
    public private(set) var missed = 0

    public init(start: Int64, interval: Int64) {
        precondition(Self.intervalRange.contains(interval), "timelapse interval out of range")
        self.start = start
        self.interval = interval
    }

    /// When shot `n` is due.
    public func time(ofShot n: Int) -> Int64 { start + Int64(n) * interval }
    /// When the next shot is due.
    public var nextTime: Int64 { time(ofShot: next) }

    /// The shots due by `now`: the numbers and times of every shot not yet handed out. A
    /// driver that wakes more than one interval late gets each of them (their frames may
    /// still be in the ring); the ones it cannot take it reports through ``recordMissed()``.
    public mutating func due(at now: Int64) -> [(number: Int, time: Int64)] {
        var out: [(number: Int, time: Int64)] = []
        while nextTime <= now {
            out.append((next, nextTime))
            next += 1
        }
        return out
    }

    public mutating func recordTaken() { taken += 1 }
    public mutating func recordMissed() { missed += 1 }
}
