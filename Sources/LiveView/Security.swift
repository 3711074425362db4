/// HTTP Basic credentials, checked in constant time.
public struct Credentials: Sendable, Hashable {
    public var username: String
    public var password: String
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// Whether an `Authorization` header carries these credentials. The comparison takes
    /// the same time wherever the first difference is, so a client cannot find the password
    /// byte by byte.
    public func accept(authorization: String?) -> Bool {
        guard let authorization else { return false }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic", let decoded = Base64.decode(parts[1].trimmingSpaces) else {
            return false
        }
        return constantTimeEqual(decoded, Array("\(username):\(password)".utf8))
    }
}

/// Equal bytes, in a time that depends on the lengths only.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt64(a.count ^ b.count)
    let n = max(a.count, b.count)
    for i in 0..<n {
        let x = i < a.count ? a[i] : 0
        let y = i < b.count ? b[i] : 0
        difference |= UInt64(x ^ y)
    }
    return difference == 0
}

/// Whether a changing request may come from the page that sent it: a browser names its
/// page's origin in `Origin`; a page of another site (which cannot read the answer, but
/// could still take photos) is refused. Without `Origin` (curl, scripts) it may.
func originAllowed(origin: String?, host: String?) -> Bool {
    guard let origin else { return true }
    guard let host, !host.isEmpty else { return false }
    let lowered = origin.lowercased()
    let scheme: String
    if lowered.hasPrefix("http://") { scheme = "http" } else if lowered.hasPrefix("https://") { scheme = "https" } else { return false }
    var authority = Substring(lowered.dropFirst(scheme.count + 3))
    if authority.hasSuffix("/") { authority = authority.dropLast() }
    guard !authority.isEmpty, !authority.contains("/"), !authority.contains("@") else { return false }
    let defaultPort = scheme == "http" ? ":80" : ":443"
    func normalised(_ s: Substring) -> Substring { s.hasSuffix(defaultPort) ? s.dropLast(defaultPort.count) : s }
    return normalised(authority) == normalised(Substring(host.lowercased()))
}

/// Whether a request without credentials is addressed to this machine by a loopback name:
/// `localhost` (or a name under it), 127.0.0.0/8 or `[::1]`, with any port. A server
/// without credentials answers only those, so a web page whose own name an attacker points
/// at 127.0.0.1 (DNS rebinding) gets nothing: its requests carry its own name in `Host`.
/// No `Host` at all (an HTTP/1.0 client) comes from no browser, and passes.
func loopbackHostAllowed(_ host: String?) -> Bool {
    guard let host else { return true }
    var name = Substring(host.lowercased())
    if name.hasPrefix("[") {
        guard let close = name.firstIndex(of: "]") else { return false }
        let rest = name[name.index(after: close)...]
        guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber)) else { return false }
        name = name[name.index(after: name.startIndex)..<close]
    } else if let colon = name.lastIndex(of: ":") {
        guard name[name.index(after: colon)...].allSatisfy(\.isNumber) else { return false }
        name = name[..<colon]
    }
    if name == "localhost" || name.hasSuffix(".localhost") { return true }
    guard !name.isEmpty else { return false }
    return ListenAddress(host: String(name), port: 1).isLoopback
}

/// Base64 (RFC 4648, with padding) decoding for `Authorization: Basic`.
enum Base64 {
    static func decode(_ text: Substring) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 4 * 3)
        var i = 0
        while i < bytes.count {
            var quad: [UInt8] = []
            var padding = 0
            for k in 0..<4 {
                let c = bytes[i + k]
                if c == UInt8(ascii: "=") {
                    guard i + 4 == bytes.count, k >= 2 else { return nil }
                    padding += 1
                    quad.append(0)
                    continue
                }
                guard padding == 0, let v = value(c) else { return nil }
                quad.append(v)
            }
            let n = UInt32(quad[0]) << 18 | UInt32(quad[1]) << 12 | UInt32(quad[2]) << 6 | UInt32(quad[3])
            out.append(UInt8(n >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(n & 0xFF)) }
            i += 4
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
