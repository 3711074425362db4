#if canImport(Glibc)
import Glibc
#endif
import LinuxIO

/// An error from the evdev layer: what went wrong, the errno behind it, and what was being
/// done ("opening /dev/input/event3: permission denied").
public struct EvdevError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure, for callers that act on it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// Access denied (EACCES/EPERM): udev rules or group membership.
        public static let permissionDenied = Code(name: "permission denied")
        /// The node is gone (ENODEV/ENOENT).
        public static let noDevice = Code(name: "no device")
        /// Another program holds the grab (EBUSY).
        public static let busy = Code(name: "busy")
        /// Any other system or libevdev failure.
        public static let failed = Code(name: "failed")
        public var description: String { name }
    }

    public var code: Code
    /// The errno, if one was involved.
    public var errno: Int32?
    /// What was being done, e.g. "opening /dev/input/event3".
    public var context: String

    public init(code: Code, errno: Int32? = nil, context: String) {
        self.code = code
        self.errno = errno
        self.context = context
    }

    /// Classifies an errno into a code.
    public init(errno: Int32, context: String) {
        let code: Code =
            switch errno {
            case EACCES, EPERM: .permissionDenied
            case ENODEV, ENOENT, ENXIO: .noDevice
            case EBUSY: .busy
            default: .failed
            }
        self.init(code: code, errno: errno, context: context)
    }

    public var description: String {
        if let errno { return "\(context): \(SystemError(errno: errno).description)" }
        return "\(context): \(code)"
    }
}
