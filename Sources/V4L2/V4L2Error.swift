#if canImport(Glibc)
import Glibc
#endif

/// A failure talking to a V4L2 device: what went wrong (``code``), the errno behind it when
/// the kernel said no, and the context — which device, which control, doing what.
///
/// `"/dev/video0: control zoom_absolute: read-only (setting it to 300)"`
public struct V4L2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// An extensible error code (new cases do not break callers that switch with `default`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The node does not exist (ENOENT).
        public static let noSuchDevice = Code("no such device")
        /// The node exists but this user may not open it (EACCES/EPERM).
        public static let permissionDenied = Code("permission denied")
        /// The device is not a V4L2 device (ENOTTY on VIDIOC_QUERYCAP).
        public static let notV4L2 = Code("not a V4L2 device")
        /// The device went away (ENODEV, EPOLLHUP): unplugged or its driver unbound.
        public static let deviceRemoved = Code("device removed")
        /// No control with this id (EINVAL on query), or `V4L2_CTRL_FLAG_DISABLED`.
        public static let noSuchControl = Code("no such control")
        /// `V4L2_CTRL_FLAG_READ_ONLY`, or EACCES on set.
        public static let readOnly = Code("read-only")
        /// `V4L2_CTRL_FLAG_WRITE_ONLY` (a button), or EACCES on get.
        public static let writeOnly = Code("write-only")
        /// `V4L2_CTRL_FLAG_INACTIVE`: another control's value makes this one ineffective now
        /// (exposure time while the camera is in auto exposure).
        public static let inactive = Code("inactive")
        /// `V4L2_CTRL_FLAG_GRABBED` or EBUSY: another program streams and holds it.
        public static let busy = Code("busy")
        /// ERANGE: outside the control's range (after clamping this means the range moved).
        public static let outOfRange = Code("out of range")
        /// EINVAL on set/get: the driver refused the value (a menu index it skips, say).
        public static let invalidValue = Code("invalid value")
        /// String and compound controls carry payloads, not integers.
        public static let unsupportedType = Code("not an integer control")
        /// Anything else (EIO from a USB camera, ...).
        public static let failed = Code("failed")
    }

    public var code: Code
    /// The errno the kernel returned, when there was one.
    public var errno: Int32?
    /// The device node (`/dev/video0`).
    public var device: String
    /// The control's v4l2-ctl style name (`zoom_absolute`), when the error is about one.
    public var control: String?
    /// What was being done ("setting it to 300").
    public var context: String

    public init(code: Code, errno: Int32? = nil, device: String, control: String? = nil, context: String) {
        self.code = code
        self.errno = errno
        self.device = device
        self.control = control
        self.context = context
    }

    public var description: String {
        var s = device
        if let control { s += ": control \(control)" }
        s += ": \(code)"
        var why: [String] = []
        if !context.isEmpty { why.append(context) }
        if let errno { why.append("\(errnoName(errno)) \(String(cString: strerror(errno)))") }
        if !why.isEmpty { s += " (" + why.joined(separator: ": ") + ")" }
        return s
    }
}

/// The symbolic name of the errno values a V4L2 caller meets.
func errnoName(_ e: Int32) -> String {
    switch e {
    case EACCES: "EACCES"
    case EPERM: "EPERM"
    case EBUSY: "EBUSY"
    case EINVAL: "EINVAL"
    case ERANGE: "ERANGE"
    case ENODEV: "ENODEV"
    case ENOENT: "ENOENT"
    case ENOTTY: "ENOTTY"
    case EIO: "EIO"
    case EAGAIN: "EAGAIN"
    case ENXIO: "ENXIO"
    case EPROTO: "EPROTO"
    default: "errno \(e)"
    }
}

/// What a control operation is, for mapping its errno to a ``V4L2Error/Code``.
public enum ControlOperation: Sendable {
    case query, get, set
}

extension V4L2Error.Code {
    /// The code for an errno returned by a control ioctl (`VIDIOC_QUERY_EXT_CTRL`,
    /// `VIDIOC_G_EXT_CTRLS`, `VIDIOC_S_EXT_CTRLS`). EACCES means read-only on a set and
    /// write-only on a get; EINVAL means an unknown control on a query, a refused value else.
    public static func forControl(errno e: Int32, operation: ControlOperation) -> V4L2Error.Code {
        switch e {
        case EACCES: operation == .get ? .writeOnly : .readOnly
        case EBUSY: .busy
        case ERANGE: .outOfRange
        case EINVAL: operation == .query ? .noSuchControl : .invalidValue
        case ENODEV, ENXIO: .deviceRemoved
        case EPERM: .permissionDenied
        default: .failed
        }
    }

    /// The code for an errno from `open(2)` on a device node.
    public static func forOpen(errno e: Int32) -> V4L2Error.Code {
        switch e {
        case ENOENT: .noSuchDevice
        case EACCES, EPERM: .permissionDenied
        case ENODEV, ENXIO: .deviceRemoved
        case EBUSY: .busy
        default: .failed
        }
    }
}
