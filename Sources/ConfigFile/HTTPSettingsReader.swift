#if canImport(Glibc)
import Glibc
#endif
import LiveView
import TOMLKit

extension ConfigReader {
    /// `[http]`: the live view. A listen address other than loopback needs `username` and
    /// `password`: a camera on the network is closed unless someone chose to open it.
    func http(_ t: TOMLTable) throws(ConfigError) -> LiveViewSettings {
        let p = ["http"]
        try checkKeys(
            t, path: p,
            allowed: [
                "listen", "username", "password", "certificate", "private-key", "max-clients", "preview-width", "webrtc", "stun-server",
                "turn-server",
            ])
        var s = LiveViewSettings()
        if let listen = try string(t, "listen", path: p) {
            switch ListenAddress.parse(listen) {
            case .success(let a): s.listen = a
            case .failure(let e): throw error(p + ["listen"], "http.listen: \(e)")
            }
        }
        let username = try string(t, "username", path: p)
        let password = try string(t, "password", path: p)
        switch (username, password) {
        case (let u?, let w?):
            guard !u.isEmpty, !u.utf8.contains(UInt8(ascii: ":")) else {
                throw error(p + ["username"], "http.username must be non-empty and without \":\"")
            }
            guard w.utf8.count >= 8 else { throw error(p + ["password"], "http.password must be at least 8 characters") }
            s.credentials = Credentials(username: u, password: w)
        case (nil, nil):
            break
        case (nil, _?):
            throw error(p + ["password"], "http.password needs http.username")
        case (_?, nil):
            throw error(p + ["username"], "http.username needs http.password")
        }
        if !s.listen.isLoopback && s.credentials == nil {
            throw error(
                p + ["listen"],
                "http.listen \"\(s.listen)\" is reachable from other machines: set http.username and http.password (HTTP Basic), or listen on 127.0.0.1"
            )
        }
        let certificate = try string(t, "certificate", path: p)
        let key = try string(t, "private-key", path: p)
        switch (certificate, key) {
        case (let c?, let k?):
            for (name, file) in [("certificate", c), ("private-key", k)] where access(file, R_OK) != 0 {
                throw error(p + [name], "http.\(name): cannot read \(file): \(String(cString: strerror(errno)))")
            }
            s.tls = .init(certificate: c, privateKey: k)
        case (nil, nil):
            break
        case (nil, _?):
            throw error(p + ["private-key"], "http.private-key needs http.certificate")
        case (_?, nil):
            throw error(p + ["certificate"], "http.certificate needs http.private-key")
        }
        if let n = try int(t, "max-clients", path: p, in: 1...64) { s.maxClients = n }
        if let w = try int(t, "preview-width", path: p, in: 160...4096) { s.previewWidth = w }
        if let on = try bool(t, "webrtc", path: p) { s.webRTC = on }
        // docs/live-view.md#webrtc: GStreamer's forms, checked here rather than on the first viewer.
        for (key, schemes) in [("stun-server", ["stun://"]), ("turn-server", ["turn://", "turns://"])] {
            guard let url = try string(t, key, path: p) else { continue }
            guard schemes.contains(where: { url.hasPrefix($0) }), url.count > schemes[0].count + 2,
                url.utf8.allSatisfy({
                    $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "'") && $0 != UInt8(ascii: "\\")
                        && $0 != UInt8(ascii: "!")
                })
            else {
                throw error(
                    p + [key],
                    "http.\(key) \"\(url)\" must be \(key == "stun-server" ? "stun://HOST:PORT" : "turn://USER:PASSWORD@HOST:PORT (or turns://)") without spaces or quotes"
                )
            }
            if key == "stun-server" { s.stunServer = url } else { s.turnServer = url }
        }
        return s
    }
}
