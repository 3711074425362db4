import Vocabulary

/// What one (device, event code) does for evcapture (docs/behaviour.md#roles).
public enum Role: String, Sendable, Hashable, CaseIterable, Codable {
    /// A capture button.
    case primary
    /// The second capture button.
    case secondary
    /// The control's press: shows and chooses controls.
    case lightPress = "light-press"
    /// Moves the active control.
    case slider
    /// Nothing.
    case ignore
}

/// Where a role came from, in rising precedence.
public enum RoleSource: String, Sendable, Hashable, Codable {
    /// The device's capabilities.
    case `default`
    /// The known-device table (``KnownDevice``).
    case knownDevice = "known-device"
    /// The udev property `EVCAPTURE_ROLE`.
    case udev
    /// The config file.
    case config
}

/// One code's role and why.
public struct RoleAssignment: Sendable, Hashable {
    public var role: Role
    public var source: RoleSource
    /// A short human reason, e.g. "volume key", "AVRCP headset", "EVCAPTURE_ROLE=knob".
    public var reason: String
    /// For `slider` keys of a knob device: the step a press gives (+1 or −1). 0 otherwise.
    public var step: Int
    /// For `slider` relative axes: what a value says (steps, a position counter, a held
    /// position). See ``SliderDecoder``.
    public var reading: AxisReading
    /// The values are an 8-bit position counter (``AxisReading/counter``).
    var isCounter: Bool { reading == .counter }

    public init(role: Role, source: RoleSource, reason: String, step: Int = 0, reading: AxisReading = .steps) {
        self.role = role
        self.source = source
        self.reason = reason
        self.step = step
        self.reading = reading
    }
}

/// What the values of a relative axis with role `slider` say (docs/behaviour.md#slider-inputs).
public enum AxisReading: Sendable, Hashable {
    /// Steps moved (detents): a knob, a wheel.
    case steps
    /// An 8-bit position counter that wraps (`slider:counter`): the Contour ShuttleXpress /
    /// ShuttlePro jog wheel's `REL_DIAL`.
    case counter
    /// Where a spring-loaded control is held (`slider:rate`), reported while it is away from
    /// rest and absent from the device's reports once it is back: the Contour shuttle ring's
    /// `REL_WHEEL` (−7 … +7). It moves the slider at a rate while held, never by the position.
    case rate
}

/// The event node of the same physical device that a node is paired with (an encoder and
/// its push switch on separate nodes), found by their shared parent
/// (docs/behaviour.md#device-pairing).
public struct DevicePartner: Sendable, Hashable {
    /// The partner's node (`/dev/input/eventN`).
    public var node: String
    /// The partner's name.
    public var name: String
    /// What the partner is to this device: `encoder` (this node is its push switch) or
    /// `push switch` (the partner's keys press this encoder).
    public var relation: Relation
    /// The parent they share (``RoleClassifier/parent(of:)``).
    public var parent: String

    public enum Relation: String, Sendable, Hashable {
        case encoder
        case pushSwitch = "push-switch"
    }

    public init(node: String, name: String, relation: Relation, parent: String) {
        self.node = node
        self.name = name
        self.relation = relation
        self.parent = parent
    }
}

/// A device together with the role of every code it can send: what the capture core and
/// the controls core need to know about where a frame came from.
public struct DeviceProfile: Sendable, Hashable {
    public var description: DeviceDescription
    /// The device node (`/dev/input/eventN`), or the recording's file name for replays.
    public var node: String
    /// Roles of the codes that do something; codes missing here are `ignore`.
    public var roles: [EventCode: RoleAssignment]
    /// A Bluetooth headset (BlueZ AVRCP): its presses play the shutter sound.
    public var isHeadset: Bool
    /// Dedicated to the rig (remote, headset, gpio-keys, knob): grabbed while the session
    /// runs. Full keyboards never are unless configured.
    public var isDedicated: Bool
    /// What kind of device it was taken for, and from where (capabilities, udev, config).
    public var kind: DeviceKind
    /// Why ``kind`` was chosen, e.g. "name ends in (AVRCP) on Bluetooth".
    public var kindReason: String
    /// Problems found in its udev property or config (an unknown role name, say); the
    /// offending entries were skipped.
    public var warnings: [String]
    /// Nodes of the same physical device it is paired with (``RoleClassifier/pair(_:)``).
    public var partners: [DevicePartner] = []
    /// Where ``isDedicated`` came from: `default` unless udev or the config named a kind or
    /// `grab`/`nograb` (pairing leaves a decided grab alone).
    var dedicationSource: RoleSource = .default

    public init(
        description: DeviceDescription, node: String, roles: [EventCode: RoleAssignment],
        isHeadset: Bool = false, isDedicated: Bool = false, kind: DeviceKind = .other,
        kindReason: String = "", warnings: [String] = []
    ) {
        self.description = description
        self.node = node
        self.roles = roles
        self.isHeadset = isHeadset
        self.isDedicated = isDedicated
        self.kind = kind
        self.kindReason = kindReason
        self.warnings = warnings
    }

    public func role(of code: EventCode) -> Role { roles[code]?.role ?? .ignore }
}
