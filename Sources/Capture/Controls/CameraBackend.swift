import CLinuxShims

/// A camera control id: the V4L2 control id (`V4L2_CID_*`), used by the simulated camera too.
public struct CameraControlID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// `V4L2_CID_BRIGHTNESS`
    public static let brightness = CameraControlID(UInt32(V4L2_CID_BRIGHTNESS))
    /// `V4L2_CID_EXPOSURE_AUTO` (menu: 0 auto, 1 manual, 2 shutter priority, 3 aperture priority)
    public static let exposureAuto = CameraControlID(UInt32(V4L2_CID_EXPOSURE_AUTO))
    /// `V4L2_CID_EXPOSURE_ABSOLUTE` (100 µs units)
    public static let exposureAbsolute = CameraControlID(UInt32(V4L2_CID_EXPOSURE_ABSOLUTE))
    /// `V4L2_CID_ZOOM_ABSOLUTE`
    public static let zoomAbsolute = CameraControlID(UInt32(V4L2_CID_ZOOM_ABSOLUTE))
    /// `V4L2_CID_AUTO_EXPOSURE_BIAS` (integer menu, in 0.001 EV units)
    public static let autoExposureBias = CameraControlID(UInt32(V4L2_CID_AUTO_EXPOSURE_BIAS))

    public var description: String { "0x" + String(rawValue, radix: 16) }
}

/// One control as a camera reports it (V4L2's `VIDIOC_QUERY_EXT_CTRL` plus the current value).
public struct CameraControlInfo: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case integer, boolean, menu, integerMenu = "integer-menu", button, other }
    public var id: CameraControlID
    /// The V4L2 name in the style v4l2-ctl prints (`zoom_absolute`).
    public var name: String
    public var kind: Kind
    public var minimum: Int64
    public var maximum: Int64
    public var step: Int64
    public var defaultValue: Int64
    public var value: Int64
    /// Menu entries by index (names, or the integer values of an integer menu as text).
    public var menu: [Int64: String]
    /// `V4L2_CTRL_FLAG_INACTIVE`: settable but without effect now (e.g. exposure time in auto mode).
    public var isInactive: Bool
    /// `V4L2_CTRL_FLAG_READ_ONLY`
    public var isReadOnly: Bool

    public init(
        id: CameraControlID, name: String, kind: Kind = .integer, minimum: Int64, maximum: Int64, step: Int64 = 1,
        defaultValue: Int64, value: Int64, menu: [Int64: String] = [:], isInactive: Bool = false, isReadOnly: Bool = false
    ) {
        self.id = id
        self.name = name
        self.kind = kind
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.value = value
        self.menu = menu
        self.isInactive = isInactive
        self.isReadOnly = isReadOnly
    }
}

/// Why a camera refused a value.
public struct CameraError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case noSuchControl = "no such control"
        case readOnly = "read-only"
        case inactive
        case busy
        case outOfRange = "out of range"
        case gone = "camera gone"
        case failed
    }
    public var code: Code
    public var control: String
    public var device: String
    public var detail: String
    public init(code: Code, control: String, device: String, detail: String = "") {
        self.code = code
        self.control = control
        self.device = device
        self.detail = detail
    }
    public var description: String {
        "\(device): control \(control): \(code.rawValue)" + (detail.isEmpty ? "" : " (\(detail))")
    }
}

/// A camera the controls drive: the V4L2 session on a real device, or the simulator used by
/// `evcapture replay --camera sim`. Calls are synchronous and fast (one ioctl each).
public protocol CameraBackend: AnyObject, Sendable {
    /// A stable identity (by-id path, or "sim"), used to refuse a second system zoom slider
    /// bound to the same camera.
    var identity: String { get }
    /// Every control with its current value.
    func controls() throws(CameraError) -> [CameraControlInfo]
    /// Sets a control; returns the value the camera holds afterwards (clamped and rounded
    /// to its step).
    @discardableResult
    func set(_ id: CameraControlID, to value: Int64) throws(CameraError) -> Int64
    /// Reads a control's current value.
    func value(of id: CameraControlID) throws(CameraError) -> Int64
    /// One control's description (range, step, menu, flags) as the backend last learned it,
    /// without asking the camera again; its `value` may be stale. For per-detent work: a
    /// full ``controls()`` reads every control from the device (on a UVC camera, USB
    /// control transfers), which made each knob step cost milliseconds. nil: no such control.
    func cachedControl(_ id: CameraControlID) throws(CameraError) -> CameraControlInfo?
}

extension CameraBackend {
    /// Default: from ``controls()`` (fine for cameras where that is cheap, such as the simulator).
    public func cachedControl(_ id: CameraControlID) throws(CameraError) -> CameraControlInfo? {
        try controls().first { $0.id == id }
    }
}
