import CLinuxShims

/// A V4L2 control id (`V4L2_CID_*`).
public struct ControlID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// `V4L2_CID_BRIGHTNESS`
    public static let brightness = ControlID(UInt32(V4L2_CID_BRIGHTNESS))
    /// `V4L2_CID_CONTRAST`
    public static let contrast = ControlID(UInt32(V4L2_CID_CONTRAST))
    /// `V4L2_CID_GAIN`
    public static let gain = ControlID(UInt32(V4L2_CID_GAIN))
    /// `V4L2_CID_EXPOSURE_AUTO` (menu: 0 auto, 1 manual, 2 shutter priority, 3 aperture priority)
    public static let exposureAuto = ControlID(UInt32(V4L2_CID_EXPOSURE_AUTO))
    /// `V4L2_CID_EXPOSURE_ABSOLUTE` (100 µs units)
    public static let exposureAbsolute = ControlID(UInt32(V4L2_CID_EXPOSURE_ABSOLUTE))
    /// `V4L2_CID_ZOOM_ABSOLUTE`
    public static let zoomAbsolute = ControlID(UInt32(V4L2_CID_ZOOM_ABSOLUTE))
    /// `V4L2_CID_AUTO_EXPOSURE_BIAS` (integer menu, 0.001 EV units)
    public static let autoExposureBias = ControlID(UInt32(V4L2_CID_AUTO_EXPOSURE_BIAS))

    /// `V4L2_CTRL_ID2CLASS`: the control class this id belongs to.
    public var controlClass: UInt32 { rawValue & 0x0fff_0000 }

    public var description: String { "0x" + String(rawValue, radix: 16) }
    public static func < (a: ControlID, b: ControlID) -> Bool { a.rawValue < b.rawValue }
}

/// `enum v4l2_ctrl_type`.
public struct ControlType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `V4L2_CTRL_TYPE_INTEGER`
    public static let integer = ControlType(rawValue: 1)
    /// `V4L2_CTRL_TYPE_BOOLEAN`
    public static let boolean = ControlType(rawValue: 2)
    /// `V4L2_CTRL_TYPE_MENU`
    public static let menu = ControlType(rawValue: 3)
    /// `V4L2_CTRL_TYPE_BUTTON`
    public static let button = ControlType(rawValue: 4)
    /// `V4L2_CTRL_TYPE_INTEGER64`
    public static let integer64 = ControlType(rawValue: 5)
    /// `V4L2_CTRL_TYPE_CTRL_CLASS`: a heading, not a control.
    public static let controlClass = ControlType(rawValue: 6)
    /// `V4L2_CTRL_TYPE_STRING`
    public static let string = ControlType(rawValue: 7)
    /// `V4L2_CTRL_TYPE_BITMASK`
    public static let bitmask = ControlType(rawValue: 8)
    /// `V4L2_CTRL_TYPE_INTEGER_MENU`
    public static let integerMenu = ControlType(rawValue: 9)

    /// Types whose value is one integer (the ones evcapture reads and sets).
    public var isInteger: Bool {
        switch self {
        case .integer, .boolean, .menu, .button, .integer64, .bitmask, .integerMenu: true
        default: false
        }
    }
    public var hasMenu: Bool { self == .menu || self == .integerMenu }

    /// The name v4l2-ctl prints (`int`, `bool`, `menu`, `intmenu`, ...).
    public var description: String {
        switch self {
        case .integer: "int"
        case .boolean: "bool"
        case .menu: "menu"
        case .button: "button"
        case .integer64: "int64"
        case .controlClass: "class"
        case .string: "str"
        case .bitmask: "bitmask"
        case .integerMenu: "intmenu"
        case ControlType(rawValue: 0x100): "u8"
        case ControlType(rawValue: 0x101): "u16"
        case ControlType(rawValue: 0x102): "u32"
        case ControlType(rawValue: 0x106): "area"
        default: "type \(rawValue)"
        }
    }
}

/// `V4L2_CTRL_FLAG_*`.
public struct ControlFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let disabled = ControlFlags(rawValue: 0x0001)
    public static let grabbed = ControlFlags(rawValue: 0x0002)
    public static let readOnly = ControlFlags(rawValue: 0x0004)
    public static let update = ControlFlags(rawValue: 0x0008)
    public static let inactive = ControlFlags(rawValue: 0x0010)
    public static let slider = ControlFlags(rawValue: 0x0020)
    public static let writeOnly = ControlFlags(rawValue: 0x0040)
    public static let volatile = ControlFlags(rawValue: 0x0080)
    static let hasPayload = ControlFlags(rawValue: 0x0100)
    static let executeOnWrite = ControlFlags(rawValue: 0x0200)
    static let modifyLayout = ControlFlags(rawValue: 0x0400)
    static let dynamicArray = ControlFlags(rawValue: 0x0800)

    private static let names: [(ControlFlags, String)] = [
        (.disabled, "disabled"), (.grabbed, "grabbed"), (.readOnly, "read-only"), (.update, "update"),
        (.inactive, "inactive"), (.slider, "slider"), (.writeOnly, "write-only"), (.volatile, "volatile"),
        (.hasPayload, "has-payload"), (.executeOnWrite, "execute-on-write"), (.modifyLayout, "modify-layout"),
        (.dynamicArray, "dynamic-array"),
    ]

    /// The flag names as v4l2-ctl prints them (`read-only`, `inactive`, ...).
    public var names: [String] {
        var out: [String] = []
        var rest = self
        for (flag, name) in Self.names where contains(flag) {
            out.append(name)
            rest.remove(flag)
        }
        if !rest.isEmpty { out.append("0x" + String(rest.rawValue, radix: 16)) }
        return out
    }
    public var description: String { names.joined(separator: ", ") }

    /// Why a control with these flags cannot be set now, or nil when it can.
    /// Disabled, read-only, grabbed (busy) and inactive are refused before any ioctl.
    public var refusalForSet: V4L2Error.Code? {
        if contains(.disabled) { return .noSuchControl }
        if contains(.readOnly) { return .readOnly }
        if contains(.grabbed) { return .busy }
        if contains(.inactive) { return .inactive }
        return nil
    }

    /// Why a control with these flags has no readable value, or nil when it has one.
    var refusalForGet: V4L2Error.Code? {
        if contains(.disabled) { return .noSuchControl }
        if contains(.writeOnly) { return .writeOnly }
        return nil
    }
}

/// One entry of a menu or integer menu (`VIDIOC_QUERYMENU`).
public struct MenuEntry: Hashable, Sendable {
    /// The value the control takes for this entry.
    public var index: Int64
    /// The entry's name (menus) or its integer as text (integer menus).
    public var name: String
    /// The entry's integer (integer menus only).
    public var value: Int64?

    public init(index: Int64, name: String, value: Int64? = nil) {
        self.index = index
        self.name = name
        self.value = value
    }
}

/// A control as `VIDIOC_QUERY_EXT_CTRL` describes it, plus its menu.
public struct ControlDescription: Hashable, Sendable {
    public var id: ControlID
    public var type: ControlType
    /// The driver's name ("Zoom, Absolute").
    public var title: String
    public var minimum: Int64
    public var maximum: Int64
    public var step: UInt64
    public var defaultValue: Int64
    public var flags: ControlFlags
    /// Elements of an array control (1 for a plain control).
    public var elements: UInt32
    /// The menu's entries (the indices the driver skips are absent).
    public var menu: [MenuEntry]

    public init(
        id: ControlID, type: ControlType, title: String, minimum: Int64, maximum: Int64, step: UInt64 = 1,
        defaultValue: Int64, flags: ControlFlags = [], elements: UInt32 = 1, menu: [MenuEntry] = []
    ) {
        self.id = id
        self.type = type
        self.title = title
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.flags = flags
        self.elements = elements
        self.menu = menu
    }

    /// The name as v4l2-ctl prints it (`zoom_absolute`).
    public var name: String { controlName(title) }

    /// Whether the value is one integer that ``V4L2Device/value(of:)`` can read.
    public var hasIntegerValue: Bool { type.isInteger && elements <= 1 && !flags.contains(.hasPayload) }

    /// The value the kernel would store for `value`: clamped to the range, rounded to the
    /// nearest step from the minimum (halves round up, as the kernel does), and for menus
    /// moved to the nearest index the driver offers (ties go to the lower one).
    public func normalize(_ value: Int64) -> Int64 {
        switch type {
        case .boolean:
            return value == 0 ? 0 : 1
        case .bitmask:
            // Only the bits the mask allows (maximum holds the mask).
            return value & maximum
        case .button:
            return value
        case .menu, .integerMenu:
            let clamped = Swift.min(Swift.max(value, minimum), maximum)
            guard !menu.isEmpty else { return clamped }
            var best = menu[0].index
            for entry in menu {
                let d = entry.index.distance(to: clamped).magnitude
                let bestD = best.distance(to: clamped).magnitude
                if d < bestD || (d == bestD && entry.index < best) { best = entry.index }
            }
            return best
        default:
            return roundToStep(value, minimum: minimum, maximum: maximum, step: step)
        }
    }
}

/// Clamps `value` to `minimum...maximum` and rounds it to `minimum + k·step` (nearest, halves
/// up), never leaving the range: a maximum off the step grid rounds down to the last step
/// below it. Exact in all of Int64 (arithmetic on the offset from the minimum, in UInt64).
func roundToStep(_ value: Int64, minimum: Int64, maximum: Int64, step: UInt64) -> Int64 {
    precondition(minimum <= maximum, "control range \(minimum)...\(maximum) is empty")
    let clamped = Swift.min(Swift.max(value, minimum), maximum)
    guard step > 1 else { return clamped }
    let offset = UInt64(bitPattern: clamped &- minimum)  // 0 ... span, exact in UInt64
    let span = UInt64(bitPattern: maximum &- minimum)
    let lower = offset - offset % step
    var rounded = lower
    if offset % step >= step - step / 2 {
        let (up, overflow) = lower.addingReportingOverflow(step)
        // Past the maximum: the last step inside the range instead.
        rounded = overflow || up > span ? span - span % step : up
    }
    return minimum &+ Int64(bitPattern: rounded)
}

/// A control name in the style v4l2-ctl prints it: lowercase letters and digits, every run of
/// other characters between them one `_` ("Zoom, Absolute" → `zoom_absolute`).
func controlName(_ title: String) -> String {
    var out = ""
    var pendingUnderscore = false
    for scalar in title.unicodeScalars {
        if scalar.isASCII, let ascii = Optional(UInt8(scalar.value)),
            (ascii >= 0x30 && ascii <= 0x39) || (ascii >= 0x41 && ascii <= 0x5a) || (ascii >= 0x61 && ascii <= 0x7a)
        {
            if pendingUnderscore { out.append("_") }
            pendingUnderscore = false
            out.unicodeScalars.append(Unicode.Scalar(ascii >= 0x41 && ascii <= 0x5a ? ascii + 0x20 : ascii))
        } else if !out.isEmpty {
            pendingUnderscore = true
        }
    }
    return out
}
