#if canImport(Glibc)
import Glibc
#endif

/// evcapture's one error shape (docs/architecture.md#errors-and-habits): what kind of failure
/// (``code``), the errno behind it (0 when there is none: a timeout, a format check, a library
/// that sets none) and what was being done (`opening /dev/input/event3`, `VIDIOC_STREAMON on
/// /dev/video0`). Each layer names its failures as codes (`EvdevError`, `StreamingError`,
/// `MovieError`, ... are this type under their layer's name) and errnos are classified in one
/// place, ``Code/init(errno:)``. LinuxIO's bare helpers (`retryingEINTR`, `writeAll`) throw it
/// without context; callers add it with ``doing(_:)``.
///
/// `"VIDIOC_STREAMON on /dev/video0: busy (device or resource busy): another program is using the camera: ..."`
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// An extensible failure code: the kinds every layer shares are here, a layer adds its own
    /// (`extension SystemError.Code { static let noBandwidth = ... }`) with the hint a person
    /// can act on. Two codes are the same when their names are.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        /// What a person can do about it, when the failure has a usual cause.
        public let hint: String?
        public init(_ rawValue: String, hint: String? = nil) {
            self.rawValue = rawValue
            self.hint = hint
        }
        public var description: String { rawValue }
        public static func == (a: Code, b: Code) -> Bool { a.rawValue == b.rawValue }
        public func hash(into h: inout Hasher) { h.combine(rawValue) }

        /// EACCES, EPERM: udev rules, group membership, a read-only mount.
        public static let permissionDenied = Code("permission denied")
        /// ENOENT: the node, file or directory does not exist.
        public static let notFound = Code("not found")
        /// ENODEV, ENXIO: the device went away (unplugged, its driver unbound).
        public static let deviceRemoved = Code("device removed")
        /// EBUSY: another program holds it.
        public static let busy = Code("busy")
        /// ENOSPC, EDQUOT, EFBIG: the disk (or the quota, or the file size limit) is full.
        public static let noSpace = Code("no space left")
        /// Nothing came within the time allowed.
        public static let timedOut = Code("timed out")
        /// Anything else (see the errno).
        public static let failed = Code("failed")

        /// The device or file is gone (ENOENT on open, ENODEV/ENXIO later): unplugged, not an error of ours.
        public var isDeviceGone: Bool { self == .notFound || self == .deviceRemoved }

        /// The one errno classifier: the code an errno means wherever it came from. A layer
        /// that knows more (EACCES on a control set means read-only) maps the few errnos that
        /// differ for it and asks this for the rest.
        public init(errno e: Int32) {
            switch e {
            case EACCES, EPERM, EROFS: self = .permissionDenied
            case ENOENT: self = .notFound
            case ENODEV, ENXIO: self = .deviceRemoved
            case EBUSY: self = .busy
            case ENOSPC, EDQUOT, EFBIG: self = .noSpace
            case ETIMEDOUT: self = .timedOut
            default: self = .failed
            }
        }
    }

    public var code: Code
    /// The errno, 0 when there is none.
    public var errno: Int32
    public var context: String

    public init(code: Code, errno: Int32 = 0, context: String = "") {
        self.code = code
        self.errno = errno
        self.context = context
    }
    /// An errno, classified (``Code/init(errno:)``).
    public init(errno: Int32, context: String = "") {
        self.init(code: Code(errno: errno), errno: errno, context: context)
    }
    /// The same failure, saying what was being done.
    public func doing(_ context: String) -> SystemError { SystemError(code: code, errno: errno, context: context) }

    /// See ``Code/isDeviceGone``.
    public var isDeviceGone: Bool { code.isDeviceGone }

    /// The kernel's wording of the errno, lower-case (`device or resource busy`); empty without one.
    public var reason: String { errno == 0 ? "" : String(cString: strerror(errno)).lowercased() }

    /// `context: reason` when the code only restates the errno; `context: code (reason)` when
    /// the code says more; `context: code` without an errno; then the code's hint, if any.
    public var description: String {
        var what: String
        if errno != 0, code == Code(errno: errno) {
            what = reason
        } else if errno != 0 {
            what = "\(code) (\(reason))"
        } else {
            what = code == .failed && !context.isEmpty ? "" : code.rawValue
        }
        var s = context.isEmpty ? what : (what.isEmpty ? context : "\(context): \(what)")
        if let hint = code.hint { s += ": \(hint)" }
        return s
    }
}

// The capture stream's codes (a V4L2 node's, a libcamera camera's) that a recording's error
// names in its JSON `error` code (``RecordingError/code``); the stream's other codes are V4L2's.
extension SystemError.Code {
    /// The camera offers none of ``PixelFormat/captureOrder``.
    public static let noUsableFormat = SystemError.Code(
        "no usable format",
        hint: "evcapture takes one of \(PixelFormat.captureOrder.map(\.description).joined(separator: ", ")); "
            + "v4l2-ctl --list-formats-ext -d DEVICE lists what the camera offers")
    /// `VIDIOC_STREAMON` failed with `ENOSPC` (or `ENOMEM`): on USB cameras, the bus has no
    /// isochronous bandwidth left for this format and size (uvcvideo).
    public static let noBandwidth = SystemError.Code(
        "not enough USB bandwidth",
        hint: "the USB bus has no bandwidth left for this format and size (another camera or a busy device on the same bus, "
            + "or uncompressed YUYV at a high resolution): try a lower resolution ([camera] width and height), "
            + "a camera that offers MJPEG, or another USB port (a bus of its own)")
    /// The stream runs, but not at the rate asked for (`[camera] fps`): the driver chose
    /// its nearest, or cannot set one.
    public static let frameRateNotAvailable = SystemError.Code(
        "frame rate not available",
        hint: "v4l2-ctl --list-formats-ext -d DEVICE lists the frame rates of each size; [camera] fps takes one of them, or leave it out")
}
