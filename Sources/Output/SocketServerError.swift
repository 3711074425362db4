#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import LinuxIO
import Logging
import Synchronization
import Capture
import Evdev
import Actions

/// Why the JSON socket could not be set up.
public struct SocketServerError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        /// The path exists and is not a socket: it is never replaced.
        case notASocket = "not a socket"
        /// Another process is listening on the path, or holds its lock (starting up).
        case inUse = "in use"
        /// The path does not fit in `sockaddr_un`.
        case pathTooLong = "path too long"
        case system = "system error"
    }
    public var code: Code
    public var errno: Int32
    public var context: String
    public var description: String {
        errno == 0 ? context : "\(context): \(String(cString: strerror(errno)))"
    }
}
