#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Logging
import Synchronization
import Vocabulary

/// Why the JSON socket could not be set up: the one error shape, ``SystemError``
/// (docs/architecture.md#errors-and-habits), under this layer's name, with the codes below.
public typealias SocketServerError = SystemError

extension SystemError.Code {
    /// The path exists and is not a socket: it is never replaced.
    static let notASocket = SystemError.Code("not a socket")
    /// Another process is listening on the path, or holds its lock (starting up).
    public static let inUse = SystemError.Code("in use")
    /// The path does not fit in `sockaddr_un`.
    static let pathTooLong = SystemError.Code("path too long")
}
