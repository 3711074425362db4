/// A countdown before a shot (docs/booth.md#countdown): pure, driven by the times it is
/// given (CLOCK_MONOTONIC µs); it never reads a clock and never sleeps.
///
/// It starts at `start` with `seconds` to go, reports one tick per second (`remaining`
/// seconds, `seconds` down to 1, the first at `start`), then the shot at
/// `start + seconds`. A press before the shot cancels it.
public struct Countdown: Sendable, Hashable {
    /// The longest countdown allowed (`countdown` in a handler: 0 to this).
    public static let maximumSeconds = 60

    public enum Step: Sendable, Hashable {
        /// `remaining` whole seconds to the shot, at `time`; `shot` is the shot's time.
        case tick(remaining: Int, time: Int64, shot: Int64)
        /// The shot is due: the photo is the frame nearest `time`.
        case shot(time: Int64)
        /// Cancelled before the shot, at `time`, with `remaining` seconds still to go.
        case cancelled(remaining: Int, time: Int64)
    }

    public let start: Int64
    public let seconds: Int
    /// The shot's time: `start + seconds`.
    public var shotTime: Int64 { start + Int64(seconds) * 1_000_000 }
    /// Ticks reported so far.
    private var ticked = 0
    public private(set) var isFinished = false

    public init(seconds: Int, start: Int64) {
        precondition((0...Self.maximumSeconds).contains(seconds), "countdown seconds out of range")
        self.seconds = seconds
        self.start = start
    }

    /// When ``advance(to:)`` has something to report next; nil once finished.
    public var deadline: Int64? {
        guard !isFinished else { return nil }
        return ticked < seconds ? start + Int64(ticked) * 1_000_000 : shotTime
    }

    /// Everything due by `now`, in order: ticks, then the shot (after which it is finished).
    /// A driver that wakes late gets the missed ticks too, each with its own time.
    public mutating func advance(to now: Int64) -> [Step] {
        var out: [Step] = []
        while let d = deadline, d <= now {
            if ticked < seconds {
                out.append(.tick(remaining: seconds - ticked, time: d, shot: shotTime))
                ticked += 1
            } else {
                out.append(.shot(time: shotTime))
                isFinished = true
            }
        }
        return out
    }

    /// A press during the countdown: cancelled, unless the shot is already due (`now` at or
    /// past the shot's time: the shot wins and is returned instead).
    public mutating func cancel(at now: Int64) -> [Step] {
        guard !isFinished else { return [] }
        if now >= shotTime { return advance(to: now) }
        isFinished = true
        let left = Int((shotTime - now + 999_999) / 1_000_000)
        return [.cancelled(remaining: left, time: now)]
    }
}
