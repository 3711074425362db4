import Vocabulary

/// A role for one code as written in `EVCAPTURE_ROLE` or the config: `primary`,
/// `secondary`, `light-press`, `slider`, `slider+1`, `slider-1` (a key that moves the
/// slider one step per press), `slider:counter` (a relative axis whose values are an 8-bit
/// position counter, e.g. a Contour jog wheel's `REL_DIAL`), `slider:rate` (a relative axis
/// that reports where a spring-loaded ring is held, e.g. a Contour shuttle ring's `REL_WHEEL`),
/// `ignore`.
public struct CodeRole: Sendable, Hashable {
    public var role: Role
    /// For keys with role `slider`: the step per press (+1 / −1); 0 for axes.
    public var step: Int
    /// For relative axes with role `slider`: what their values say.
    public var reading: AxisReading

    public init(_ role: Role, step: Int = 0, reading: AxisReading = .steps) {
        self.role = role
        self.step = step
        self.reading = reading
    }

    /// The spellings, for messages.
    public static let spellings =
        "primary, secondary, light-press, slider, slider+1, slider-1, slider:counter, slider:rate or ignore"

    /// Parses `primary`, `slider-1`, `slider:counter`, ...; nil for anything else.
    public init?(parsing text: some StringProtocol) {
        switch text.lowercased() {
        case "slider+1", "slider+": self.init(.slider, step: 1)
        case "slider-1", "slider-": self.init(.slider, step: -1)
        case "slider:counter": self.init(.slider, reading: .counter)
        case "slider:rate": self.init(.slider, reading: .rate)
        case "lightpress", "light_press": self.init(.lightPress)
        case let word:
            guard let role = Role(rawValue: word) else { return nil }
            self.init(role)
        }
    }

    /// Parses the role of `code`, or says what is wrong with it: an unknown spelling, a
    /// step on an axis, a counter on anything but a relative axis.
    public static func parse(_ text: some StringProtocol, for code: EventCode) -> Result<CodeRole, RoleSyntaxError> {
        guard let role = CodeRole(parsing: text) else {
            return .failure(RoleSyntaxError("unknown role \"\(text)\" for \(code.name) (use \(spellings))"))
        }
        if role.reading == .counter && code.type != .rel {
            return .failure(
                RoleSyntaxError("\(code.name)=\(role.spelling): only relative axes (REL_*) can be position counters"))
        }
        if role.reading == .rate && code.type != .rel {
            return .failure(
                RoleSyntaxError("\(code.name)=\(role.spelling): only relative axes (REL_*) can report a held position"))
        }
        if role.step != 0 && code.type != .key {
            return .failure(RoleSyntaxError("\(code.name)=\(role.spelling): a step per press needs a key (KEY_*, BTN_*)"))
        }
        return .success(role)
    }

    /// The spelling ``init(parsing:)`` reads back.
    public var spelling: String {
        switch (role, step, reading) {
        case (.slider, _, .counter): "slider:counter"
        case (.slider, _, .rate): "slider:rate"
        case (.slider, 1..., _): "slider+1"
        case (.slider, ..<0, _): "slider-1"
        default: role.rawValue
        }
    }
}

/// Why a `CODE=role` item was refused; the caller adds where it was written.
public struct RoleSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
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
    /// `KEY_VOLUMEUP=slider+1`, `REL_DIAL=slider:counter`). Whitespace around items is ignored.
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
                switch CodeRole.parse(spec, for: code) {
                case .success(let role): result.codes[code] = role
                case .failure(let problem): problems.append("EVCAPTURE_ROLE: \(problem)")
                }
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
