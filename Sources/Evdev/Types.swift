#if canImport(Glibc)
import Glibc
#endif
import LinuxIO
import CLibevdev

/// An evdev event type (`EV_*`).
public struct EventType: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// `EV_SYN`
    public static let syn = EventType(UInt16(EV_SYN))
    /// `EV_KEY`
    public static let key = EventType(UInt16(EV_KEY))
    /// `EV_REL`
    public static let rel = EventType(UInt16(EV_REL))
    /// `EV_ABS`
    public static let abs = EventType(UInt16(EV_ABS))
    /// `EV_MSC`
    public static let msc = EventType(UInt16(EV_MSC))
    /// `EV_SW`
    static let sw = EventType(UInt16(EV_SW))
    /// `EV_LED`
    public static let led = EventType(UInt16(EV_LED))
    /// `EV_SND`
    public static let snd = EventType(UInt16(EV_SND))
    /// `EV_REP`
    public static let rep = EventType(UInt16(EV_REP))
    /// `EV_FF`
    public static let ff = EventType(UInt16(EV_FF))
    /// `EV_MAX`
    public static let max = EventType(UInt16(EV_MAX))

    /// The kernel name, e.g. `EV_KEY`.
    public var name: String {
        guard let p = libevdev_event_type_get_name(UInt32(rawValue)) else { return String(format0x: rawValue) }
        return String(cString: p)
    }
    public var description: String { name }
    /// The largest code of this type (`KEY_MAX`, `REL_MAX`, ...), or -1 for an unknown type.
    var maxCode: Int { Int(libevdev_event_type_get_max(UInt32(rawValue))) }
    public static func < (a: EventType, b: EventType) -> Bool { a.rawValue < b.rawValue }

    /// Looks up a kernel name such as `EV_KEY`.
    public init?(name: String) {
        let v = libevdev_event_type_from_name(name)
        guard v >= 0 else { return nil }
        self.rawValue = UInt16(v)
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
        if let p = libevdev_event_code_get_name(UInt32(type.rawValue), UInt32(code)) {
            return String(cString: p)
        }
        return "\(type.name):\(String(format0x: code))"
    }
    public var description: String { name }

    /// Looks up a kernel name such as `KEY_VOLUMEDOWN`, `REL_DIAL` or `BTN_0`.
    public init?(name: String) {
        let type = libevdev_event_type_from_code_name(name)
        let code = libevdev_event_code_from_code_name(name)
        guard type >= 0, code >= 0 else { return nil }
        self.init(EventType(UInt16(type)), UInt16(code))
    }

    public static func < (a: EventCode, b: EventCode) -> Bool {
        (a.type.rawValue, a.code) < (b.type.rawValue, b.code)
    }

    public static func key(_ code: UInt16) -> EventCode { EventCode(.key, code) }
    public static func rel(_ code: UInt16) -> EventCode { EventCode(.rel, code) }
    public static func abs(_ code: UInt16) -> EventCode { EventCode(.abs, code) }

    // Codes the product knows by name (values from linux/input-event-codes.h).
    /// `SYN_REPORT`
    public static let synReport = EventCode(.syn, 0)
    /// `SYN_DROPPED`
    static let synDropped = EventCode(.syn, 3)
    /// `KEY_ENTER`
    public static let enter = key(UInt16(KEY_ENTER))
    /// `KEY_SPACE`
    public static let space = key(UInt16(KEY_SPACE))
    /// `KEY_KPENTER`
    public static let kpEnter = key(UInt16(KEY_KPENTER))
    /// `KEY_MUTE`
    public static let mute = key(UInt16(KEY_MUTE))
    /// `KEY_VOLUMEDOWN`
    public static let volumeDown = key(UInt16(KEY_VOLUMEDOWN))
    /// `KEY_VOLUMEUP`
    public static let volumeUp = key(UInt16(KEY_VOLUMEUP))
    /// `KEY_POWER`
    public static let power = key(UInt16(KEY_POWER))
    /// `KEY_PAGEUP`
    public static let pageUp = key(UInt16(KEY_PAGEUP))
    /// `KEY_PAGEDOWN`
    public static let pageDown = key(UInt16(KEY_PAGEDOWN))
    /// `KEY_NEXTSONG`
    public static let nextSong = key(UInt16(KEY_NEXTSONG))
    /// `KEY_PLAYPAUSE`
    public static let playPause = key(UInt16(KEY_PLAYPAUSE))
    /// `KEY_PLAYCD`
    public static let playCD = key(UInt16(KEY_PLAYCD))
    /// `KEY_PAUSECD`
    public static let pauseCD = key(UInt16(KEY_PAUSECD))
    /// `KEY_CAMERA`
    public static let camera = key(UInt16(KEY_CAMERA))
    /// `KEY_SELECT`
    public static let select = key(UInt16(KEY_SELECT))
    /// `KEY_CAMERA_FOCUS`
    public static let cameraFocus = key(UInt16(KEY_CAMERA_FOCUS))
    /// `BTN_0`
    public static let btn0 = key(UInt16(BTN_0))
    /// `BTN_LEFT`, a pointer's main button
    public static let btnLeft = key(UInt16(BTN_LEFT))
    /// `KEY_A`, the first letter key (a keyboard marker)
    static let keyA = key(UInt16(KEY_A))
    /// `REL_X`
    public static let relX = rel(UInt16(REL_X))
    /// `REL_Y`
    public static let relY = rel(UInt16(REL_Y))
    /// `REL_HWHEEL`
    public static let relHWheel = rel(UInt16(REL_HWHEEL))
    /// `REL_DIAL`
    public static let relDial = rel(UInt16(REL_DIAL))
    /// `REL_WHEEL`
    public static let relWheel = rel(UInt16(REL_WHEEL))
    /// `REL_WHEEL_HI_RES`
    public static let relWheelHiRes = rel(UInt16(REL_WHEEL_HI_RES))
    /// `REL_HWHEEL_HI_RES`
    public static let relHWheelHiRes = rel(UInt16(REL_HWHEEL_HI_RES))
}

/// A kernel timestamp (`input_event.time`): seconds and microseconds.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Microseconds since the clock's epoch (CLOCK_MONOTONIC for live devices once set,
    /// the recording's start for evemu files).
    public var microseconds: Int64
    public init(microseconds: Int64) { self.microseconds = microseconds }
    public init(seconds: Int, microseconds usec: Int) { microseconds = Int64(seconds) * 1_000_000 + Int64(usec) }
    public var seconds: Double { Double(microseconds) / 1_000_000 }
    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.microseconds < b.microseconds }
    public static func + (a: Timestamp, d: Duration) -> Timestamp {
        let (s, atto) = d.components
        return Timestamp(microseconds: a.microseconds + s * 1_000_000 + atto / 1_000_000_000_000)
    }
    public static func - (a: Timestamp, d: Duration) -> Timestamp { a + (.zero - d) }
    public static func - (a: Timestamp, b: Timestamp) -> Duration { .microseconds(a.microseconds - b.microseconds) }
    public var description: String {
        let s = microseconds / 1_000_000, us = Swift.abs(microseconds % 1_000_000)
        let frac = String(us)
        return "\(s).\(String(repeating: "0", count: 6 - frac.count))\(frac)"
    }
}

/// One evdev event.
public struct InputEvent: Hashable, Sendable {
    public var time: Timestamp
    public var type: EventType
    public var code: UInt16
    public var value: Int32
    public init(time: Timestamp, type: EventType, code: UInt16, value: Int32) {
        self.time = time
        self.type = type
        self.code = code
        self.value = value
    }
    public init(time: Timestamp, _ code: EventCode, _ value: Int32) {
        self.init(time: time, type: code.type, code: code.code, value: value)
    }
    public var eventCode: EventCode { EventCode(type, code) }
    var isSynReport: Bool { type == .syn && code == 0 }
}

/// The bus a device sits on (`BUS_*` from linux/input.h).
public struct BusType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let usb = BusType(rawValue: 0x03)
    public static let bluetooth = BusType(rawValue: 0x05)
    public static let virtual = BusType(rawValue: 0x06)
    public static let host = BusType(rawValue: 0x19)
    public var description: String {
        switch self {
        case .usb: "usb"
        case .bluetooth: "bluetooth"
        case .virtual: "virtual"
        case .host: "host"
        default: String(format0x: rawValue)
        }
    }
}

/// `input_absinfo` of one absolute axis.
public struct AbsInfo: Hashable, Sendable {
    public var value: Int32, minimum: Int32, maximum: Int32, fuzz: Int32, flat: Int32, resolution: Int32
    public init(value: Int32 = 0, minimum: Int32, maximum: Int32, fuzz: Int32 = 0, flat: Int32 = 0, resolution: Int32 = 0) {
        self.value = value
        self.minimum = minimum
        self.maximum = maximum
        self.fuzz = fuzz
        self.flat = flat
        self.resolution = resolution
    }
}

/// What a device is and what it can send: enough to decide its roles, whether it comes
/// from a live node (libevdev) or from an evemu recording.
public struct DeviceDescription: Hashable, Sendable {
    public var name: String
    public var bus: BusType
    public var vendor: UInt16
    public var product: UInt16
    public var version: UInt16
    /// The unique id (`uniq`, e.g. a Bluetooth address), if any.
    public var uniq: String?
    /// The physical path (`phys`), if any.
    public var phys: String?
    /// Every (type, code) the device declares, `EV_SYN` included.
    public var codes: Set<EventCode>
    /// Axis ranges for the `EV_ABS` codes.
    public var absInfo: [UInt16: AbsInfo]
    /// Input properties (`INPUT_PROP_*`).
    public var properties: Set<UInt16>

    public init(
        name: String, bus: BusType, vendor: UInt16 = 0, product: UInt16 = 0, version: UInt16 = 0,
        uniq: String? = nil, phys: String? = nil, codes: Set<EventCode> = [], absInfo: [UInt16: AbsInfo] = [:],
        properties: Set<UInt16> = []
    ) {
        self.name = name
        self.bus = bus
        self.vendor = vendor
        self.product = product
        self.version = version
        self.uniq = uniq
        self.phys = phys
        self.codes = codes
        self.absInfo = absInfo
        self.properties = properties
    }

    public func has(_ code: EventCode) -> Bool { codes.contains(code) }
    public func has(_ type: EventType) -> Bool { codes.contains { $0.type == type } }
    /// Whether the device asks for kernel autorepeat (`EV_REP`).
    var hasAutorepeat: Bool { has(.rep) }
}

extension String {
    init(format0x v: UInt16) {
        let hex = String(v, radix: 16)
        self = "0x" + String(repeating: "0", count: Swift.max(0, 4 - hex.count)) + hex
    }
}

/// The current CLOCK_MONOTONIC time: the clock evdev devices are switched to, so kernel
/// event times and deadlines compare directly.
public func monotonicNow() -> Timestamp {
    Timestamp(microseconds: monotonicMicroseconds())
}

// The one conversion between CLOCK_MONOTONIC and wall-clock time: wall time only where a
// person or another station reads it (file names, EXIF, MP4 creation time, trigger messages).
extension Timestamp {
    /// The CLOCK_MONOTONIC time of a wall-clock time (seconds since 1970).
    public init(wallSeconds seconds: Double) {
        self.init(microseconds: monotonicNow().microseconds - Int64(((wallClockNow() - seconds) * 1_000_000).rounded()))
    }

    /// The wall-clock time (seconds since 1970) of this CLOCK_MONOTONIC time.
    public var wallSeconds: Double {
        wallClockNow() - Double(monotonicNow().microseconds - microseconds) / 1_000_000
    }
}
