// Event types and codes with the kernel's names, from the floor's own table (EventNames.swift,
// generated from linux/input-event-codes.h): no libevdev below the I/O modules
// (docs/architecture.md#modules).

/// An evdev event type (`EV_*`).
public struct EventType: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// `EV_SYN`
    public static let syn = EventType(0x00)
    /// `EV_KEY`
    public static let key = EventType(0x01)
    /// `EV_REL`
    public static let rel = EventType(0x02)
    /// `EV_ABS`
    public static let abs = EventType(0x03)
    /// `EV_MSC`
    public static let msc = EventType(0x04)
    /// `EV_SW`
    package static let sw = EventType(0x05)
    /// `EV_LED`
    public static let led = EventType(0x11)
    /// `EV_SND`
    public static let snd = EventType(0x12)
    /// `EV_REP`
    public static let rep = EventType(0x14)
    /// `EV_FF`
    public static let ff = EventType(0x15)
    /// `EV_MAX`
    public static let max = EventType(0x1f)

    /// The kernel name, e.g. `EV_KEY`.
    public var name: String { EventNames.types[rawValue] ?? String(format0x: rawValue) }
    public var description: String { name }
    /// The largest code of this type (`KEY_MAX`, `REL_MAX`, ...), or -1 for a type without codes.
    package var maxCode: Int { EventNames.maxCodes[rawValue] ?? -1 }
    public static func < (a: EventType, b: EventType) -> Bool { a.rawValue < b.rawValue }

    /// Looks up a kernel name such as `EV_KEY`.
    public init?(name: String) {
        guard let v = EventNames.typesByName[name] else { return nil }
        self.rawValue = v
    }
}

/// An event code together with its type (`KEY_VOLUMEDOWN` is `EV_KEY`/114).
public struct EventCode: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let type: EventType
    public let code: UInt16
    public init(_ type: EventType, _ code: UInt16) {
        self.type = type
        self.code = code
    }

    /// The kernel name, e.g. `KEY_VOLUMEDOWN`; for codes without a name, `EV_KEY:0x13f`.
    public var name: String {
        if let n = EventNames.codes[UInt32(type.rawValue) << 16 | UInt32(code)] { return n }
        return "\(type.name):\(String(format0x: code))"
    }
    public var description: String { name }

    /// Looks up a kernel name such as `KEY_VOLUMEDOWN`, `REL_DIAL` or `BTN_0`.
    public init?(name: String) {
        guard let k = EventNames.readOnly[name] ?? EventNames.codesByName[name] else { return nil }
        self.init(EventType(UInt16(k >> 16)), UInt16(k & 0xffff))
    }

    public static func < (a: EventCode, b: EventCode) -> Bool {
        (a.type.rawValue, a.code) < (b.type.rawValue, b.code)
    }

    public static func key(_ code: UInt16) -> EventCode { EventCode(.key, code) }
    public static func rel(_ code: UInt16) -> EventCode { EventCode(.rel, code) }
    public static func abs(_ code: UInt16) -> EventCode { EventCode(.abs, code) }

    // Codes the product knows by name (values from linux/input-event-codes.h; EventNamesTests
    // checks each against the header's).
    /// `SYN_REPORT`
    public static let synReport = EventCode(.syn, 0)
    /// `SYN_DROPPED`
    package static let synDropped = EventCode(.syn, 3)
    /// `KEY_ENTER`
    public static let enter = key(28)
    /// `KEY_SPACE`
    public static let space = key(57)
    /// `KEY_KPENTER`
    public static let kpEnter = key(96)
    /// `KEY_MUTE`
    public static let mute = key(113)
    /// `KEY_VOLUMEDOWN`
    public static let volumeDown = key(114)
    /// `KEY_VOLUMEUP`
    public static let volumeUp = key(115)
    /// `KEY_POWER`
    public static let power = key(116)
    /// `KEY_PAGEUP`
    public static let pageUp = key(104)
    /// `KEY_PAGEDOWN`
    public static let pageDown = key(109)
    /// `KEY_NEXTSONG`
    public static let nextSong = key(163)
    /// `KEY_PLAYPAUSE`
    public static let playPause = key(164)
    /// `KEY_PLAYCD`
    public static let playCD = key(200)
    /// `KEY_PAUSECD`
    public static let pauseCD = key(201)
    /// `KEY_CAMERA`
    public static let camera = key(212)
    /// `KEY_SELECT`
    public static let select = key(0x161)
    /// `KEY_CAMERA_FOCUS`
    public static let cameraFocus = key(0x210)
    /// `BTN_0`
    public static let btn0 = key(0x100)
    /// `BTN_LEFT`, a pointer's main button
    public static let btnLeft = key(0x110)
    /// `KEY_A`, the first letter key (a keyboard marker)
    package static let keyA = key(30)
    /// `REL_X`
    public static let relX = rel(0x00)
    /// `REL_Y`
    public static let relY = rel(0x01)
    /// `REL_HWHEEL`
    public static let relHWheel = rel(0x06)
    /// `REL_DIAL`
    public static let relDial = rel(0x07)
    /// `REL_WHEEL`
    public static let relWheel = rel(0x08)
    /// `REL_WHEEL_HI_RES`
    public static let relWheelHiRes = rel(0x0b)
    /// `REL_HWHEEL_HI_RES`
    public static let relHWheelHiRes = rel(0x0c)
}

extension EventNames {
    /// The type names read back.
    static let typesByName: [String: UInt16] = Dictionary(types.map { ($0.value, $0.key) }, uniquingKeysWith: Swift.min)
    /// The printed code names read back (``readOnly`` holds the rest).
    static let codesByName: [String: UInt32] = Dictionary(codes.map { ($0.value, $0.key) }, uniquingKeysWith: Swift.min)
}

extension String {
    /// `0x` and four hex digits: how a type or code without a name is printed.
    package init(format0x v: UInt16) {
        let hex = String(v, radix: 16)
        self = "0x" + String(repeating: "0", count: Swift.max(0, 4 - hex.count)) + hex
    }
}
