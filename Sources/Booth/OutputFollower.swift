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
    /// A shot's moment known ahead (a countdown's end, a timelapse's next shot): its pulse is
    /// planned now, so that the output's own timer changes the level at that moment; the
    /// ``shot(time:)`` that comes then adds nothing.
    case shotDue(time: Int64)
    /// The countdown or timelapse that announced shots ended: planned pulses that have not
    /// started are dropped (a shot that still comes pulses as it comes).
    case shotsCancelled
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
    /// The moments of planned pulses that ended before their shot came (its report can come
    /// late, after a short pulse): that shot adds nothing either. The last few only.
    private var pulsedAhead: [Int64] = []

    struct Pulse: Sendable, Hashable {
        var start: Int64
        var end: Int64
        /// Announced ahead (``OutputEvent/shotDue(time:)``), its shot not come yet.
        var planned = false
    }

    public init(rule: OutputRule) { self.rule = rule }

    public static func == (a: Self, b: Self) -> Bool {
        a.rule == b.rule && a.held == b.held && a.countdown?.start == b.countdown?.start
            && a.countdown?.shot == b.countdown?.shot && a.pulses == b.pulses && a.pulsedAhead == b.pulsedAhead
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
        case (.pulseAtShot, .shot(let t)) where pulses.contains(where: { $0.planned && $0.start == t }):
            // Planned when it was announced: the shot came.
            for i in pulses.indices where pulses[i].start == t { pulses[i].planned = false }
        case (.pulseAtShot, .shot(let t)) where pulsedAhead.contains(t):
            pulsedAhead.removeAll { $0 == t }
        case (.pulseAtShot(let length), .shot(let t)), (.pulseAtBegan(let length), .began(let t)):
            let start = max(t, now)
            pulses.append(Pulse(start: start, end: start + length))
            pulses.sort { $0.start < $1.start }
        case (.pulseAtShot(let length), .shotDue(let t)) where t > now && !pulses.contains(where: { $0.start == t }):
            // A moment already here or past is left to its shot.
            pulses.append(Pulse(start: t, end: t + length, planned: true))
            pulses.sort { $0.start < $1.start }
        case (.pulseAtShot, .shotsCancelled):
            pulses.removeAll { $0.planned && $0.start > now }
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
        for p in pulses where p.planned && p.end <= now { pulsedAhead.append(p.start) }
        if pulsedAhead.count > 8 { pulsedAhead.removeFirst(pulsedAhead.count - 8) }
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
