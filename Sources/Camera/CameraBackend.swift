import Capture
import V4L2

/// A camera control id: V4L2's (`V4L2_CID_*`, from the kernel headers), used by the
/// simulated camera too.
public typealias CameraControlID = ControlID

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
    var isReadOnly: Bool

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

/// Why a camera refused a value: V4L2's error (code, errno, device, control, what was being
/// done), which the simulated camera throws too.
public typealias CameraError = V4L2Error

/// A camera the controls drive: the V4L2 session on a real device, or the simulator used by
/// `evcapture replay --camera sim`. Calls are synchronous and fast (one ioctl each).
public protocol CameraBackend: BoundCamera {
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

extension ControlRefusal {
    /// A camera's error as the controls report it.
    public init(_ error: CameraError) {
        self.init(code: error.code.rawValue, message: error.description)
    }
}

extension ControlBinding {
    /// The camera this binding drives, as the camera module knows it: every camera bound by
    /// the camera module is a ``CameraBackend``.
    var backend: (any CameraBackend)? { camera as? any CameraBackend }
}
