/// A device together with the role of every code it can send: what the capture core and
/// the controls core need to know about where a frame came from. Plain data: how the roles are
/// decided (capabilities, the known-device table, udev, the config, pairing) is `Roles`'s.
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
    /// Nodes of the same physical device it is paired with (`RoleClassifier.pair(_:)`, in Roles).
    public var partners: [DevicePartner] = []
    /// Where ``isDedicated`` came from: `default` unless udev or the config named a kind or
    /// `grab`/`nograb` (pairing leaves a decided grab alone).
    package var dedicationSource: RoleSource = .default

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
    /// The known-device table (`KnownDevice`, in Roles).
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
    /// position). See `SliderDecoder`, in Capture.
    public var reading: AxisReading
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
    /// The parent they share (`RoleClassifier.parent(of:)`, in Roles).
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
}
