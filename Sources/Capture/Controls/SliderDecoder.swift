import Vocabulary

/// What the controls interaction reacts to (docs/behaviour.md#controls-interaction): a light
/// press, or slider detents.
public enum ControlsInput: Sendable, Hashable {
    /// A `light-press` key went down.
    case lightPress
    /// The slider moved by this many detents (positive: up / clockwise).
    case slide(Int)
}

/// Turns one device's frames into `ControlsInput`s, from the roles of its codes. Pure.
///
/// Sources (docs/behaviour.md#slider-inputs):
/// - relative axes (`REL_X`, `REL_Y`, `REL_DIAL`, `REL_HWHEEL`, …): one unit is one detent;
/// - wheels: `REL_WHEEL_HI_RES` accumulates 120 units per detent, carrying the remainder
///   (reset when the direction reverses, as the kernel's own low-res synthesis does), and
///   `REL_WHEEL` is used only when the device has no hi-res code. Which one counts is decided
///   once from the device's capabilities, never per frame, so the two are never both counted;
/// - knob keys: a press (value 1 only; releases and autorepeat add nothing) gives the
///   assignment's `step` (+1 / −1);
/// - absolute rotary axes (`rotary-encoder` with `rollover`): the change since the last value,
///   taken the short way round across the wrap between the axis minimum and maximum;
/// - counter axes (`slider:counter`, the Contour ShuttleXpress / ShuttlePro jog wheel): a
///   relative code whose values are an 8-bit position counter. The step is
///   (value − previous) mod 256 read as a signed byte (−128 … 127), so 255 → 1 is +2 (the
///   kernel drops `EV_REL` 0, so position 0 is never seen) and 1 → 255 is −2. The first value
///   only sets the reference: a new decoder (device opened, or events lost) knows no
///   position. A repeat of the same position (sent with the shuttle ring's reports) is 0.
/// - rate axes (`slider:rate`, the Contour shuttle ring's `REL_WHEEL`): where a spring-loaded
///   ring is held (−7 … +7; `REL_WHEEL_HI_RES` in 120ths when the frame has no `REL_WHEEL`),
///   present in each of the device's reports while it is away from rest and absent once it is
///   back (the kernel drops `EV_REL` 0). A position is not a movement: held at p, the slider
///   moves one step in p's direction at once and then |p| × ``rateStepsPerSecond`` steps a
///   second, on the decoder's own deadlines (``nextDeadline``, ``advance(to:_:)``), until a
///   report without the ring says it is back. Time is passed in; the decoder reads no clock.
///
/// Positions (counters, absolute axes) must follow the device even while nothing is to be
/// moved (the session is stopped): ``observe(_:)`` updates them without giving inputs.
public struct SliderDecoder: Sendable {
    /// The modulus of counter axes: they carry an 8-bit position.
    static let counterModulus = 256

    /// Wheel units per detent of `REL_WHEEL_HI_RES` / `REL_HWHEEL_HI_RES`.
    static let hiResUnitsPerDetent = 120

    /// Steps a second per unit of a rate axis's position: a shuttle ring held at +7 moves
    /// 14 steps a second, at +1 two.
    static let rateStepsPerSecond = 2

    /// Relative codes that count, with their units per detent (1, or 120 for hi-res wheels).
    private(set) var relativeUnits: [UInt16: Int] = [:]
    /// Knob keys and the step each press gives.
    private(set) var keySteps: [UInt16: Int] = [:]
    /// Light-press keys.
    private(set) var lightPressKeys: Set<UInt16> = []
    /// Absolute rotary axes with their range.
    private(set) var rotaryAxes: [UInt16: AbsInfo] = [:]
    /// Relative codes that carry a position counter instead of steps.
    private(set) var counterAxes: Set<UInt16> = []
    /// Relative codes that report a held position (a rate axis): low-res codes with 1 per
    /// position, hi-res ones with 120.
    private(set) var rateAxes: [UInt16: Int] = [:]

    private var remainders: [UInt16: Int] = [:]
    private var lastAbsolute: [UInt16: Int32] = [:]
    /// The last position of each counter axis; missing until its first value.
    private var lastCounter: [UInt16: Int32] = [:]
    /// Where the rate axis is held (0: at rest), and when its next step is due (nil: none).
    private(set) var ratePosition = 0
    public private(set) var nextDeadline: Timestamp?

    public init(profile: DeviceProfile) {
        let device = profile.description
        func isSlider(_ c: EventCode, _ reading: AxisReading = .steps) -> Bool {
            profile.roles[c].map { $0.role == .slider && $0.reading == reading } == true && device.has(c)
        }
        let wheelPairs: [(low: EventCode, high: EventCode)] = [
            (.relWheel, .relWheelHiRes), (.relHWheel, .relHWheelHiRes),
        ]
        let wheelCodes = Set(wheelPairs.flatMap { [$0.low, $0.high] })
        // A ring reports its position on both codes of a pair where the kernel adds the hi-res
        // one: the pair is one rate axis, whichever code was named.
        for pair in wheelPairs where isSlider(pair.low, .rate) || isSlider(pair.high, .rate) {
            if device.has(pair.low) { rateAxes[pair.low.code] = 1 }
            if device.has(pair.high) { rateAxes[pair.high.code] = Self.hiResUnitsPerDetent }
        }
        for pair in wheelPairs
        where (isSlider(pair.low) || isSlider(pair.high)) && rateAxes[pair.low.code] == nil
            && rateAxes[pair.high.code] == nil
        {
            if device.has(pair.high) {
                relativeUnits[pair.high.code] = Self.hiResUnitsPerDetent
            } else {
                relativeUnits[pair.low.code] = 1
            }
        }
        for (code, assignment) in profile.roles where device.has(code) {
            switch (code.type, assignment.role) {
            case (.rel, .slider) where assignment.reading == .counter:
                // A position, never a detent count, whatever the code (the wheel pairing
                // above leaves counters alone).
                counterAxes.insert(code.code)
            case (.rel, .slider) where assignment.reading == .rate:
                if !wheelCodes.contains(code) { rateAxes[code.code] = 1 }
            case (.rel, .slider) where !wheelCodes.contains(code):
                relativeUnits[code.code] = 1
            case (.key, .slider) where assignment.step != 0:
                keySteps[code.code] = assignment.step
            case (.key, .lightPress):
                lightPressKeys.insert(code.code)
            case (.abs, .slider):
                if let info = device.absInfo[code.code], info.maximum > info.minimum {
                    rotaryAxes[code.code] = info
                    lastAbsolute[code.code] = Swift.min(Swift.max(info.value, info.minimum), info.maximum)
                }
            default:
                break
            }
        }
    }

    /// Whether the device can move a control.
    public var isSliderCapable: Bool {
        !relativeUnits.isEmpty || !keySteps.isEmpty || !rotaryAxes.isEmpty || !counterAxes.isEmpty || !rateAxes.isEmpty
    }
    /// Whether the device has axes whose position must be followed (``observe(_:)``).
    public var followsPositions: Bool { !rotaryAxes.isEmpty || !counterAxes.isEmpty || !rateAxes.isEmpty }
    /// Whether the device has a light press.
    var hasLightPress: Bool { !lightPressKeys.isEmpty }

    /// The inputs of one frame (events up to `SYN_REPORT`) read at `now` (by default its last
    /// event's time), in order; slider movements that follow each other within the frame are
    /// summed.
    public mutating func decode(_ frame: [InputEvent], at now: Timestamp? = nil) -> [ControlsInput] {
        var out: [ControlsInput] = []
        decode(frame, at: now) { out.append($0) }
        return out
    }

    /// ``decode(_:at:)`` without an array: each input goes to `each`, in order (the hot path).
    public mutating func decode(_ frame: [InputEvent], at now: Timestamp? = nil, _ each: (ControlsInput) -> Void) {
        var slid = 0
        if !rateAxes.isEmpty, let time = now ?? frame.last?.time {
            slid += hold(at: Self.ratePosition(in: frame, rateAxes), time)
        }
        for e in frame {
            switch e.type {
            case .rel where rateAxes[e.code] != nil:
                continue
            case .rel where counterAxes.contains(e.code):
                slid += counterStep(e.code, to: e.value)
            case .rel:
                guard let units = relativeUnits[e.code] else { continue }
                if units == 1 { slid += Int(e.value); continue }
                var acc = remainders[e.code, default: 0]
                if (acc > 0 && e.value < 0) || (acc < 0 && e.value > 0) { acc = 0 }
                acc += Int(e.value)
                slid += acc / units  // truncates toward zero: partial detents carry
                remainders[e.code] = acc % units
            case .key:
                guard e.value == 1 else { continue }
                if lightPressKeys.contains(e.code) {
                    if slid != 0 { each(.slide(slid)) }
                    slid = 0
                    each(.lightPress)
                }
                if let step = keySteps[e.code] { slid += step }
            case .abs:
                slid += absoluteStep(e.code, to: e.value)
            default:
                continue
            }
        }
        if slid != 0 { each(.slide(slid)) }
    }

    /// The steps of a held rate axis due at or before `now`, each at its own time: one
    /// `.slide` per step to `each`.
    public mutating func advance(to now: Timestamp, _ each: (ControlsInput) -> Void) {
        while let due = nextDeadline, due <= now, ratePosition != 0 {
            each(.slide(ratePosition > 0 ? 1 : -1))
            nextDeadline = due + Self.rateInterval(ratePosition)
        }
    }

    /// The ring is held at `position` from `now`: the step it owes at once when it leaves
    /// rest; the next step is re-timed from `now` when the position changes, and none is due
    /// at rest.
    private mutating func hold(at position: Int, _ now: Timestamp) -> Int {
        defer { ratePosition = position }
        if position == 0 {
            nextDeadline = nil
            return 0
        }
        if ratePosition == 0 || (ratePosition > 0) != (position > 0) {
            nextDeadline = now + Self.rateInterval(position)
            return position > 0 ? 1 : -1
        }
        // Moved within its side, or reported again after a stop (nothing was due): from now.
        if position != ratePosition || nextDeadline == nil { nextDeadline = now + Self.rateInterval(position) }
        return 0
    }

    /// The time between steps while held at `position`.
    static func rateInterval(_ position: Int) -> Duration {
        .microseconds(1_000_000 / (Swift.max(1, Swift.abs(position)) * rateStepsPerSecond))
    }

    /// Where the ring is in `frame`: its low-res code if there, else the hi-res one in whole
    /// positions, else 0 (at rest: the report does not carry it).
    static func ratePosition(in frame: [InputEvent], _ axes: [UInt16: Int]) -> Int {
        var hiRes: Int?
        for e in frame where e.type == .rel {
            guard let units = axes[e.code] else { continue }
            if units == 1 { return Int(e.value) }
            hiRes = Int(e.value) / units
        }
        return hiRes ?? 0
    }

    /// Follows the positions in `frame` (counter and absolute axes) without giving inputs:
    /// for frames read while nothing is to be moved, so the next movement starts from where
    /// the device really is. A held rate axis moves nothing meanwhile.
    public mutating func observe(_ frame: [InputEvent]) {
        if !rateAxes.isEmpty {
            ratePosition = Self.ratePosition(in: frame, rateAxes)
            nextDeadline = nil
        }
        for e in frame {
            switch e.type {
            case .rel where counterAxes.contains(e.code): _ = counterStep(e.code, to: e.value)
            case .abs: _ = absoluteStep(e.code, to: e.value)
            default: continue
            }
        }
    }

    /// The step from the counter's last position to `value`; 0 for its first value.
    private mutating func counterStep(_ code: UInt16, to value: Int32) -> Int {
        defer { lastCounter[code] = value }
        guard let last = lastCounter[code] else { return 0 }
        let m = Self.counterModulus
        let d = ((Int(value) - Int(last)) % m + m) % m  // 0 ..< 256
        return d >= m / 2 ? d - m : d
    }

    /// The change of an absolute rotary axis, the short way round its wrap.
    private mutating func absoluteStep(_ code: UInt16, to value: Int32) -> Int {
        guard let info = rotaryAxes[code] else { return 0 }
        let v = Swift.min(Swift.max(value, info.minimum), info.maximum)
        let last = lastAbsolute[code] ?? v
        lastAbsolute[code] = v
        let span = Int(info.maximum) - Int(info.minimum) + 1
        var d = Int(v) - Int(last)
        if d > span / 2 { d -= span } else if d < -span / 2 { d += span }
        return d
    }
}
