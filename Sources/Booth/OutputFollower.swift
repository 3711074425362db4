/// What an output (an LED, a relay on a GPIO line) follows (docs/booth.md#outputs).
public enum OutputRule: Sendable, Hashable {
    /// On while the capture session runs.
    case session
    /// On while a video records.
    case recording
    /// Blinking during a countdown: on for the first half of each second, off for the second.
    case countdown
    /// A pulse of `length` µs at each shot (the moment its photo's frame is taken).
    case pulseAtShot(length: Int64)
    /// A pulse of `length` µs at each press's `began`.
    case pulseAtBegan(length: Int64)

    /// Pulse lengths allowed: 1 ms to 10 s.
    public static let pulseRange: ClosedRange<Int64> = 1_000...10_000_000
}

/// What outputs follow, in the daemon's terms, with CLOCK_MONOTONIC µs times.
public enum OutputEvent: Sendable, Hashable {
    case session(running: Bool)
    case recording(Bool)
    /// A countdown runs from `start` to `shot`.
    case countdownStarted(start: Int64, shot: Int64)
    case countdownEnded
    /// A shot's moment.
    case shot(time: Int64)
    case began(time: Int64)
}

/// An output's level as a function of the events it was given and the time: pure, no
/// clock, no sleeping. The output thread asks for the level now and for the next time it
/// changes, and sleeps until then.
public struct OutputFollower: Sendable, Hashable {
    public let rule: OutputRule
    private var held = false
    private var countdown: (start: Int64, shot: Int64)?
    /// Pulses as [start, end) µs, in start order.
    private var pulses: [Pulse] = []

    struct Pulse: Sendable, Hashable {
        var start: Int64
        var end: Int64
    }

    public init(rule: OutputRule) { self.rule = rule }

    public static func == (a: Self, b: Self) -> Bool {
        a.rule == b.rule && a.held == b.held && a.countdown?.start == b.countdown?.start
            && a.countdown?.shot == b.countdown?.shot && a.pulses == b.pulses
    }
    public func hash(into h: inout Hasher) {
        h.combine(rule)
        h.combine(held)
        h.combine(pulses)
    }

    /// Takes an event that arrived at `now`. A pulse whose moment has passed (a photo's
    /// frame from before the click) starts at `now` and keeps its whole length.
    public mutating func handle(_ event: OutputEvent, now: Int64) {
        switch (rule, event) {
        case (.session, .session(let running)): held = running
        case (.recording, .recording(let on)): held = on
        case (.countdown, .countdownStarted(let start, let shot)): countdown = (start, shot)
        case (.countdown, .countdownEnded): countdown = nil
        case (.pulseAtShot(let length), .shot(let t)), (.pulseAtBegan(let length), .began(let t)):
            let start = max(t, now)
            pulses.append(Pulse(start: start, end: start + length))
            pulses.sort { $0.start < $1.start }
        case (_, .session(running: false)):
            // A stopped session ends every countdown and pulse.
            countdown = nil
            pulses.removeAll()
        default: break
        }
    }

    /// Whether the output is on at `now`.
    public func level(at now: Int64) -> Bool {
        if held { return true }
        if let c = countdown, now >= c.start, now < c.shot {
            return (now - c.start) % 1_000_000 < 500_000
        }
        return pulses.contains { now >= $0.start && now < $0.end }
    }

    /// The next time after `now` the level may change; nil when only an event can change it.
    /// Forgets pulses that are over.
    public mutating func nextChange(after now: Int64) -> Int64? {
        pulses.removeAll { $0.end <= now }
        var next: Int64?
        func consider(_ t: Int64) { if t > now { next = min(next ?? t, t) } }
        for p in pulses {
            consider(p.start)
            consider(p.end)
        }
        if let c = countdown {
            if now < c.start {
                consider(c.start)
            } else if now < c.shot {
                let into = (now - c.start) % 1_000_000
                consider(now - into + (into < 500_000 ? 500_000 : 1_000_000))
                consider(c.shot)
            }
        }
        return next
    }
}
