import Evdev

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
///
/// Positions (counters, absolute axes) must follow the device even while nothing is to be
/// moved (the session is stopped): ``observe(_:)`` updates them without giving inputs.
public struct SliderDecoder: Sendable {
    /// The modulus of counter axes: they carry an 8-bit position.
    public static let counterModulus = 256

    /// Wheel units per detent of `REL_WHEEL_HI_RES` / `REL_HWHEEL_HI_RES`.
    public static let hiResUnitsPerDetent = 120

    /// Relative codes that count, with their units per detent (1, or 120 for hi-res wheels).
    public private(set) var relativeUnits: [UInt16: Int] = [:]
    /// Knob keys and the step each press gives.
    public private(set) var keySteps: [UInt16: Int] = [:]
    /// Light-press keys.
    public private(set) var lightPressKeys: Set<UInt16> = []
    /// Absolute rotary axes with their range.
    public private(set) var rotaryAxes: [UInt16: AbsInfo] = [:]
    /// Relative codes that carry a position counter instead of steps.
    public private(set) var counterAxes: Set<UInt16> = []

    private var remainders: [UInt16: Int] = [:]
    private var lastAbsolute: [UInt16: Int32] = [:]
    /// The last position of each counter axis; missing until its first value.
    private var lastCounter: [UInt16: Int32] = [:]

    public init(profile: DeviceProfile) {
        let device = profile.description
        func isSlider(_ c: EventCode) -> Bool {
            profile.roles[c].map { $0.role == .slider && !$0.isCounter } == true && device.has(c)
        }
        let wheelPairs: [(low: EventCode, high: EventCode)] = [
            (.relWheel, .relWheelHiRes), (.relHWheel, .relHWheelHiRes),
        ]
        let wheelCodes = Set(wheelPairs.flatMap { [$0.low, $0.high] })
        for pair in wheelPairs where isSlider(pair.low) || isSlider(pair.high) {
            if device.has(pair.high) {
                relativeUnits[pair.high.code] = Self.hiResUnitsPerDetent
            } else {
                relativeUnits[pair.low.code] = 1
            }
        }
        for (code, assignment) in profile.roles where device.has(code) {
            switch (code.type, assignment.role) {
            case (.rel, .slider) where assignment.isCounter:
                // A position, never a detent count, whatever the code (the wheel pairing
                // above leaves counters alone).
                counterAxes.insert(code.code)
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
        !relativeUnits.isEmpty || !keySteps.isEmpty || !rotaryAxes.isEmpty || !counterAxes.isEmpty
    }
    /// Whether the device has axes whose position must be followed (``observe(_:)``).
    public var followsPositions: Bool { !rotaryAxes.isEmpty || !counterAxes.isEmpty }
    /// Whether the device has a light press.
    public var hasLightPress: Bool { !lightPressKeys.isEmpty }

    /// The inputs of one frame (events up to `SYN_REPORT`), in order; slider movements that
    /// follow each other within the frame are summed.
    public mutating func decode(_ frame: [InputEvent]) -> [ControlsInput] {
        var out: [ControlsInput] = []
        decode(frame) { out.append($0) }
        return out
    }

    /// ``decode(_:)`` without an array: each input goes to `each`, in order (the hot path).
    public mutating func decode(_ frame: [InputEvent], _ each: (ControlsInput) -> Void) {
        var slid = 0
        for e in frame {
            switch e.type {
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

    /// Follows the positions in `frame` (counter and absolute axes) without giving inputs:
    /// for frames read while nothing is to be moved, so the next movement starts from where
    /// the device really is.
    public mutating func observe(_ frame: [InputEvent]) {
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
