import Vocabulary

/// Devices used by the scenarios, with hand-written roles (the classifier is tested elsewhere).
public enum TestDevices {
    public static func profile(
        _ name: String, bus: BusType = .host, roles: [EventCode: Role], steps: [EventCode: Int] = [:],
        headset: Bool = false
    ) -> DeviceProfile {
        var assignments = roles.mapValues { RoleAssignment(role: $0, source: .default, reason: "test") }
        for (code, step) in steps { assignments[code] = RoleAssignment(role: .slider, source: .config, reason: "knob", step: step) }
        return DeviceProfile(
            description: DeviceDescription(name: name, bus: bus, codes: Set(assignments.keys)), node: "/dev/input/\(name)",
            roles: assignments, isHeadset: headset)
    }

    public static let gpio = profile("gpio-keys", roles: [.volumeDown: .primary, .volumeUp: .secondary, .power: .ignore])
    public static let headset = profile(
        "Headset (AVRCP)", bus: .bluetooth, roles: [.playCD: .primary, .pauseCD: .primary, .nextSong: .primary], headset: true)
    public static let knob = profile("knob", bus: .usb, roles: [.mute: .lightPress], steps: [.volumeUp: 1, .volumeDown: -1])
    public static let dial = profile("dial", bus: .usb, roles: [.relDial: .slider, .btn0: .lightPress])
}
