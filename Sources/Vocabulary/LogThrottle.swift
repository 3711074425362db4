/// At most one log line of a kind per `interval`: the next one carries the count of those
/// left out meanwhile. For lines a client or a flood can cause (a full queue, wrong
/// credentials), so that the log stays readable and bounded.
public struct LogThrottle: Sendable {
    public let interval: Duration
    private var last: Timestamp?
    private var suppressed = 0

    public init(interval: Duration) { self.interval = interval }

    /// nil: leave this line out; else log it, mentioning the number returned (the lines
    /// left out before it).
    public mutating func admit(now: Timestamp) -> Int? {
        if let last, now - last < interval {
            suppressed += 1
            return nil
        }
        last = now
        defer { suppressed = 0 }
        return suppressed
    }
}
