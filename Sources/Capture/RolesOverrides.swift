import Evdev

/// What a device is taken for. It decides the roles of all its codes at once; the raw
/// values are the device-level words of `EVCAPTURE_ROLE` and of the config file.
public enum DeviceKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// Volume / camera buttons (gpio-keys, platform buttons, "Consumer Control" nodes):
    /// `KEY_VOLUMEDOWN` and `KEY_CAMERA` primary, `KEY_VOLUMEUP` secondary,
    /// `KEY_CAMERA_FOCUS` light-press. Dedicated when it is gpio-keys / adc-keys.
    case buttons
    /// A remote shutter or presenter: volume, enter, space, page-up/down, camera keys
    /// (and `BTN_0`/`BTN_LEFT`) are all primary. Dedicated.
    case shutter
    /// A Bluetooth headset (BlueZ AVRCP): play/pause keys primary, volume keys as for
    /// `buttons`; its presses play the shutter sound. Dedicated.
    case headset
    /// A volume knob: `KEY_VOLUMEUP` slider +1, `KEY_VOLUMEDOWN` slider −1, `KEY_MUTE`
    /// light-press; wheel/dial axes slider. Dedicated.
    case knob
    /// A dial (PowerMate, Surface Dial, tablet dial): `REL_DIAL`/`REL_WHEEL`/
    /// `REL_WHEEL_HI_RES` slider, `BTN_0` light-press. Dedicated.
    case dial
    /// A rotary encoder and/or its push switch: relative and absolute axes slider, every
    /// key light-press. Dedicated.
    case encoder
    /// A full keyboard: only its volume / camera keys count; never dedicated.
    case keyboard
    /// A mouse or other pointer: its wheel is a slider; never dedicated.
    case pointer
    /// Everything ignored.
    case ignore
    /// Nothing it sends has a default role.
    case other

    /// Whether devices of this kind are grabbed while the session runs (spec §3).
    public var isDedicated: Bool {
        switch self {
        case .shutter, .headset, .knob, .dial, .encoder: true
        case .buttons, .keyboard, .pointer, .ignore, .other: false
        }
    }
}

/// A role for one code as written in `EVCAPTURE_ROLE` or the config: `primary`,
/// `secondary`, `light-press`, `slider`, `slider+1`, `slider-1` (a key that moves the
/// slider one step per press), `ignore`.
public struct CodeRole: Sendable, Hashable {
    public var role: Role
    /// For keys with role `slider`: the step per press (+1 / −1); 0 for axes.
    public var step: Int

    public init(_ role: Role, step: Int = 0) {
        self.role = role
        self.step = step
    }

    /// Parses `primary`, `slider-1`, ...; nil for anything else.
    public init?(parsing text: some StringProtocol) {
        switch text.lowercased() {
        case "slider+1", "slider+": self.init(.slider, step: 1)
        case "slider-1", "slider-": self.init(.slider, step: -1)
        case "lightpress", "light_press": self.init(.lightPress)
        case let word:
            guard let role = Role(rawValue: word) else { return nil }
            self.init(role)
        }
    }

    /// The spelling ``init(parsing:)`` reads back.
    public var spelling: String {
        switch (role, step) {
        case (.slider, 1...): "slider+1"
        case (.slider, ..<0): "slider-1"
        default: role.rawValue
        }
    }
}

/// Role settings from one source (the udev property or the config file) for one device.
///
/// A device-level ``kind`` replaces the device's default roles with that kind's; per-code
/// ``codes`` then replace single codes. See ``RoleClassifier`` for precedence.
public struct RoleOverrides: Sendable, Hashable {
    public var kind: DeviceKind?
    public var codes: [EventCode: CodeRole]
    /// Grab (or never grab) the device while the session runs, whatever its kind says.
    public var dedicated: Bool?

    public init(kind: DeviceKind? = nil, codes: [EventCode: CodeRole] = [:], dedicated: Bool? = nil) {
        self.kind = kind
        self.codes = codes
        self.dedicated = dedicated
    }

    public var isEmpty: Bool { kind == nil && codes.isEmpty && dedicated == nil }

    /// Reads the udev property `EVCAPTURE_ROLE`: comma-separated items, each either a
    /// device kind (`knob`, `shutter`, `headset`, `dial`, `encoder`, `buttons`,
    /// `keyboard`, `pointer`, `ignore`), `grab` / `nograb`, or `CODE=role` with a kernel
    /// code name and a ``CodeRole`` spelling (`KEY_ENTER=light-press`,
    /// `KEY_VOLUMEUP=slider+1`). Whitespace around items is ignored.
    ///
    /// Unknown items are returned as problems (and skipped): udev gives no file or line to
    /// point at, so the caller reports them with the device.
    public static func parse(udevProperty value: String) -> (overrides: RoleOverrides, problems: [String]) {
        var result = RoleOverrides()
        var problems: [String] = []
        for rawItem in value.split(separator: ",") {
            let item = rawItem.trimmingWhitespace()
            if item.isEmpty { continue }
            if let eq = item.firstIndex(of: "=") {
                let name = item[..<eq].trimmingWhitespace(), spec = item[item.index(after: eq)...].trimmingWhitespace()
                guard let code = EventCode(name: String(name)) else {
                    problems.append("EVCAPTURE_ROLE: unknown event code \"\(name)\"")
                    continue
                }
                guard let role = CodeRole(parsing: spec) else {
                    problems.append("EVCAPTURE_ROLE: unknown role \"\(spec)\" for \(name) (use primary, secondary, light-press, slider, slider+1, slider-1 or ignore)")
                    continue
                }
                result.codes[code] = role
            } else if item == "grab" {
                result.dedicated = true
            } else if item == "nograb" {
                result.dedicated = false
            } else if let kind = DeviceKind(rawValue: String(item)), kind != .other {
                if let previous = result.kind, previous != kind {
                    problems.append("EVCAPTURE_ROLE: both \"\(previous.rawValue)\" and \"\(kind.rawValue)\"; using \"\(kind.rawValue)\"")
                }
                result.kind = kind
            } else {
                let kinds = DeviceKind.allCases.filter { $0 != .other }.map(\.rawValue).joined(separator: ", ")
                problems.append("EVCAPTURE_ROLE: unknown item \"\(item)\" (device kinds: \(kinds); or CODE=role)")
            }
        }
        return (result, problems)
    }
}

extension StringProtocol {
    fileprivate func trimmingWhitespace() -> Substring {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
              let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return Substring(self[first...last])
    }
}
