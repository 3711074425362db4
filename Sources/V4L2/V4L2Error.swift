#if canImport(Glibc)
import Glibc
#endif
import Vocabulary

/// A failure talking to a V4L2 device: the one error shape (a ``SystemError/Code``, the errno
/// behind it, 0 when there is none, and what was being done; docs/architecture.md#errors-and-habits)
/// plus the device node and the control it was about, which callers read.
///
/// `"/dev/video0: control zoom_absolute: read-only (setting it to 300)"`
public struct V4L2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The shared, extensible code (V4L2's own are below, in `extension SystemError.Code`).
    public typealias Code = SystemError.Code

    public var code: Code
    /// The errno the kernel returned, 0 when there was none.
    public var errno: Int32
    /// The device node (`/dev/video0`).
    public var device: String
    /// The control's v4l2-ctl style name (`zoom_absolute`), when the error is about one.
    public var control: String?
    /// What was being done ("setting it to 300").
    public var context: String

    public init(code: Code, errno: Int32 = 0, device: String, control: String? = nil, context: String) {
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
        if errno != 0 { why.append("\(errnoName(errno)) \(String(cString: strerror(errno)))") }
        if !why.isEmpty { s += " (" + why.joined(separator: ": ") + ")" }
        return s
    }
}

extension SystemError.Code {
    /// The device is not a V4L2 device (ENOTTY on VIDIOC_QUERYCAP).
    static let notV4L2 = SystemError.Code("not a V4L2 device")
    /// No control with this id (EINVAL on query), or `V4L2_CTRL_FLAG_DISABLED`.
    public static let noSuchControl = SystemError.Code("no such control")
    /// `V4L2_CTRL_FLAG_READ_ONLY`, or EACCES on set.
    public static let readOnly = SystemError.Code("read-only")
    /// `V4L2_CTRL_FLAG_WRITE_ONLY` (a button), or EACCES on get.
    public static let writeOnly = SystemError.Code("write-only")
    /// `V4L2_CTRL_FLAG_INACTIVE`: another control's value makes this one ineffective now
    /// (exposure time while the camera is in auto exposure).
    public static let inactive = SystemError.Code("inactive")
    /// ERANGE: outside the control's range (after clamping this means the range moved).
    public static let outOfRange = SystemError.Code("out of range")
    /// EINVAL on set/get: the driver refused the value (a menu index it skips, say).
    static let invalidValue = SystemError.Code("invalid value")
    /// String and compound controls carry payloads, not integers.
    public static let unsupportedType = SystemError.Code("not an integer control")
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
        case ERANGE: .outOfRange
        case EINVAL: operation == .query ? .noSuchControl : .invalidValue
        // ENOENT from a control ioctl is not a missing node
        case ENOENT: .failed
        default: SystemError.Code(errno: e)
        }
    }

}
