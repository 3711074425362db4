import LiveView
import RTSP
import TOMLKit

extension ConfigReader {
    /// `[rtsp]`: the camera's live H.264 over RTSP (docs/live-view.md#rtsp). Its clients give
    /// the live view's credentials (`[http]`'s `username` and `password`): required, as for
    /// the live view, to listen anywhere but loopback, and asked for wherever it listens once
    /// they are set.
    func rtsp(_ t: TOMLTable, http: LiveViewSettings?) throws(ConfigError) -> RTSPSettings {
        let p = ["rtsp"]
        try checkKeys(t, path: p, allowed: ["listen"])
        var s = RTSPSettings()
        if let listen = try string(t, "listen", path: p) {
            switch ListenAddress.parse(listen) {
            case .success(let a):
                s.host = a.host
                s.port = a.port
            case .failure(let e): throw error(p + ["listen"], "rtsp.listen: \(e)")
            }
        }
        if let c = http?.credentials {
            s.username = c.username
            s.password = c.password
        } else if !ListenAddress(host: s.host, port: s.port).isLoopback {
            throw error(
                p + ["listen"],
                "rtsp.listen \"\(ListenAddress(host: s.host, port: s.port))\" is reachable from other machines: set http.username and http.password (RTSP clients give the live view's credentials), or listen on 127.0.0.1"
            )
        }
        return s
    }
}
