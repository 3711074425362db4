#if canImport(Glibc)
import Glibc
#endif

/// The live view's `[http]` table: where it listens, who may use it, TLS, and how many
/// viewers it serves at once. Without the table there is no server at all.
public struct LiveViewSettings: Sendable, Hashable {
    /// Loopback by default: anything reachable over a network is closed unless configured.
    public var listen = ListenAddress(host: "127.0.0.1", port: 8080)
    /// HTTP Basic credentials; required for a non-loopback ``listen`` address.
    public var credentials: Credentials?
    /// PEM files; with them the server speaks HTTPS only.
    public var tls: TLSFiles?
    /// Streams (`/stream.mjpg`, `/events`) served at once; more get 503.
    public var maxClients = 4
    /// Uncompressed frames are scaled down by a whole factor to at most this width for the stream.
    public var previewWidth = 640
    /// JPEG quality of the stream's encoded frames (uncompressed cameras).
    public var previewQuality = 75
    /// WebRTC viewers through `/api/whep` (docs/live-view.md#webrtc); the page falls back to
    /// MJPEG without it.
    public var webRTC = true
    /// `stun://HOST:PORT`, for viewers behind NAT (none by default: a LAN needs none).
    public var stunServer: String?
    /// `turn://USER:PASSWORD@HOST:PORT` (or `turns://`), to relay through (none by default).
    public var turnServer: String?

    public init() {}

    public struct TLSFiles: Sendable, Hashable {
        public var certificate: String
        public var privateKey: String
        public init(certificate: String, privateKey: String) {
            self.certificate = certificate
            self.privateKey = privateKey
        }
    }
}

/// `host:port` as written in `[http] listen`: an IPv4 literal, `[IPv6]`, or `localhost`.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `0.0.0.0` or `::`: the server listens on every address of the machine.
    public var isEveryAddress: Bool { host == "0.0.0.0" || host == "::" }

    /// The host as a client on another machine writes it in a URL: `hostName` for every
    /// address, an IPv6 literal in brackets.
    public func urlHost(hostName: String) -> String {
        isEveryAddress ? hostName : host.contains(":") ? "[\(host)]" : host
    }

    /// Parses `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8443`, `localhost:8080`; the reason
    /// when it cannot.
    public static func parse(_ text: String) -> Result<ListenAddress, ListenAddressError> {
        var host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return .failure(.init("\"\(text)\" is not [IPv6]:port"))
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return .failure(.init("\"\(text)\" has no :port")) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return .failure(.init("\"\(text)\": write an IPv6 address in brackets, [::1]:8080")) }
        }
        guard let port = Int(portText), (1...65535).contains(port) else {
            return .failure(.init("\"\(text)\": the port must be between 1 and 65535"))
        }
        if host == "localhost" { host = "127.0.0.1" }
        guard Self.isIPLiteral(String(host)) else {
            return .failure(.init("\"\(text)\": the host must be an IP address (or localhost), not a name"))
        }
        return .success(ListenAddress(host: String(host), port: port))
    }

    /// 127.0.0.0/8 or ::1: reachable from this machine only.
    public var isLoopback: Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { b in b.prefix(15).allSatisfy { $0 == 0 } && b[15] == 1 }
        }
        return false
    }

    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

public struct ListenAddressError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}
