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
    package var hasAutorepeat: Bool { has(.rep) }
}
