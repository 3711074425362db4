#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import FoundationEssentials
import Camera
import Vocabulary
import Output
import ConfigFile
import Udev

/// systemd's readiness protocol (`sd_notify(3)`), without libsystemd: one datagram with
/// `KEY=VALUE` lines sent to the `AF_UNIX` socket named by `$NOTIFY_SOCKET` (a path, or an
/// abstract name written with a leading `@`).
///
/// The daemon sends `READY=1` after its first device enumeration (`Type=notify`), `STATUS=`
/// lines as it likes, and `STOPPING=1` when it shuts down.
public struct SystemdNotifier: Sendable {
    /// The socket address, or nil when not started by systemd (then every call does nothing).
    public let socketPath: String?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"]
        socketPath = (path?.isEmpty ?? true) ? nil : path
    }

    public init(socketPath: String?) { self.socketPath = socketPath }

    /// The one error shape (docs/architecture.md#errors-and-habits): the errno and what was being sent.
    public typealias NotifyError = SystemError

    /// Sends `state` (e.g. `"READY=1\nSTATUS=watching 3 devices"`). Returns false when there
    /// is no notify socket; throws when sending fails.
    @discardableResult
    public func notify(_ state: String) throws(NotifyError) -> Bool {
        guard let socketPath else { return false }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity, bytes.count > 1 || !abstract, !bytes.isEmpty else {
            throw NotifyError(errno: ENAMETOOLONG, context: "NOTIFY_SOCKET \(socketPath)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        // Abstract names are not NUL-terminated: their length is part of the address.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))

        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NotifyError(errno: errno, context: "socket(AF_UNIX, SOCK_DGRAM)") }
        defer { close(fd) }
        let message = Array(state.utf8)
        let sent = message.withUnsafeBytes { m in
            withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, m.baseAddress, m.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        guard sent == message.count else {
            throw NotifyError(errno: sent < 0 ? errno : EMSGSIZE, context: "sending \"\(state)\" to NOTIFY_SOCKET \(socketPath)")
        }
        return true
    }

    /// `READY=1` with an optional status line.
    @discardableResult
    public func ready(status: String? = nil) throws(NotifyError) -> Bool {
        try notify(status.map { "READY=1\nSTATUS=\($0)" } ?? "READY=1")
    }

    /// `STOPPING=1`.
    @discardableResult
    public func stopping() throws(NotifyError) -> Bool { try notify("STOPPING=1") }
}
