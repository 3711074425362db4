import Capture
import Vocabulary

/// A seeded random generator (SplitMix64) so property tests are repeatable.
public struct SeededRandom: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The state changes among `events`, as (change, control) pairs.
public func states(_ events: [ControlsEvent]) -> [String] {
    events.compactMap {
        if case .state(let s, let c, _) = $0 { return "\(s.rawValue):\(c ?? "-")" }
        return nil
    }
}

/// The value changes among `events`.
public func values(_ events: [ControlsEvent]) -> [Double] {
    events.compactMap {
        if case .value(let v) = $0 { return v.value }
        return nil
    }
}

/// Three app controls: a continuous slider, a discrete slider and a picker.
public func appControls() -> [Control] {
    [
        .slider(name: "focus", title: "Focus", symbolName: "scope", range: 0...10, value: 0, prominentValues: [5], format: "%.1f"),
        .slider(name: "iso", title: "ISO", symbolName: "camera.aperture", values: [100, 200, 400, 800, 1600], value: 100, format: "%.0f"),
        .indexPicker(name: "wb", title: "White balance", symbolName: "sun.max", titles: ["Auto", "Daylight", "Cloudy", "Tungsten"]),
    ]
}

public func core(_ controls: [Control], configuration: ControlsConfiguration = .init(), remembered: String? = nil) -> ControlsCore {
    var c = ControlsCore(configuration: configuration, rememberedControl: remembered)
    c.beginConfiguration()
    for control in controls { _ = try! c.addControl(control, at: at(0)) }
    _ = c.commitConfiguration(at: at(0))
    return c
}

/// A device with hand-written roles, for the slider decoders.
public func profile(
    _ name: String, codes: [EventCode], roles: [EventCode: RoleAssignment], absInfo: [UInt16: AbsInfo] = [:]
) -> DeviceProfile {
    DeviceProfile(
        description: DeviceDescription(name: name, bus: .usb, codes: Set(codes + [.synReport]), absInfo: absInfo),
        node: "/dev/input/" + name, roles: roles)
}

public let slider = RoleAssignment(role: .slider, source: .default, reason: "test")
public let lightPress = RoleAssignment(role: .lightPress, source: .default, reason: "test")

/// One frame: the events at `t`, then SYN_REPORT.
public func frame(_ t: Double, _ events: (EventCode, Int32)...) -> [InputEvent] {
    events.map { InputEvent(time: at(t), $0.0, $0.1) } + [InputEvent(time: at(t), .synReport, 0)]
}
