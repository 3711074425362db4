/// What a request asks for, decided from its method and target alone. Pure.
enum Route: Sendable, Hashable {
    /// `GET /`: the web page.
    case page
    /// `GET /stream.mjpg`: the ring as multipart/x-mixed-replace JPEG parts.
    case stream
    /// `GET /snapshot.jpg`: the newest frame.
    case snapshot
    /// `GET /events`: the JSON lines as Server-Sent Events.
    case events
    /// `GET /api/media`: the photos and videos, as JSON.
    case mediaList
    /// `GET /media/NAME`: one photo or video from the output directory.
    case media(String)
    /// `POST /api/capture`, `/api/control/next`, `/api/control/step?by=N`: as a button or knob.
    case input(LiveViewInput)
    /// `POST /api/whep`: a WebRTC viewer's SDP offer (WHEP, RFC 9725; docs/live-view.md#webrtc).
    case whepOffer
    /// `DELETE /api/whep/ID`: the end of a WebRTC viewer's session.
    case whepEnd(String)
    /// Known path, other method (405, with `Allow`). `GET` routes take `HEAD` too.
    case methodNotAllowed(allow: String)
    /// A target that cannot be read (400).
    case badRequest(String)
    case notFound

    /// `method` as sent (`GET`, `POST`), `target` the request target (`/path?query`).
    public init(method: String, target: String) {
        let pathPart: Substring
        let query: Substring
        if let q = target.firstIndex(of: "?") {
            pathPart = target[..<q]
            query = target[target.index(after: q)...]
        } else {
            pathPart = Substring(target)
            query = ""
        }
        guard let path = percentDecoded(pathPart) else {
            self = .badRequest("the path is not valid percent-encoded UTF-8")
            return
        }
        // HEAD is answered wherever GET is: the same head, no body.
        let get = method == "GET" || method == "HEAD"
        func readOnly(_ route: Route) -> Route { get ? route : .methodNotAllowed(allow: "GET, HEAD") }
        func changing(_ route: Route) -> Route { method == "POST" ? route : .methodNotAllowed(allow: "POST") }
        switch path {
        case "/", "/index.html": self = readOnly(.page)
        case "/stream.mjpg": self = readOnly(.stream)
        case "/snapshot.jpg": self = readOnly(.snapshot)
        case "/events": self = readOnly(.events)
        case "/api/media": self = readOnly(.mediaList)
        case "/api/capture": self = changing(.input(.capture))
        case "/api/control/next": self = changing(.input(.nextControl))
        case "/api/whep": self = changing(.whepOffer)
        case "/api/control/step":
            guard let by = Self.parameter("by", in: query).flatMap({ Int($0) }), by != 0, (-100...100).contains(by) else {
                self = method == "POST" ? .badRequest("by must be a whole number of steps, -100 to 100, not 0") : changing(.notFound)
                return
            }
            self = changing(.input(.step(by)))
        default:
            if path.hasPrefix(Self.whepPrefix) {
                let id = String(path.dropFirst(Self.whepPrefix.count))
                guard Self.isSessionID(id) else {
                    self = .notFound
                    return
                }
                self = method == "DELETE" ? .whepEnd(id) : .methodNotAllowed(allow: "DELETE")
            } else if path.hasPrefix("/media/") {
                let name = String(path.dropFirst("/media/".count))
                self = readOnly(MediaDirectory.isPlainName(name) ? .media(name) : .notFound)
            } else {
                self = .notFound
            }
        }
    }

    /// Where a WebRTC viewer's session is (`Location` of the answer): this and its ID.
    static let whepPrefix = "/api/whep/"

    /// A session ID as the server makes them: 1 to 64 letters, digits and `-`.
    static func isSessionID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy {
                $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }
    }

    static func parameter(_ name: String, in query: Substring) -> String? {
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            if kv.count == 2, kv[0] == name { return percentDecoded(kv[1]) }
        }
        return nil
    }
}

/// What the page (or a script) asks the daemon to do, as a button or knob would.
public enum LiveViewInput: Sendable, Hashable {
    /// A click of the primary capture button.
    case capture
    /// A light press: shows the controls, then chooses the next one.
    case nextControl
    /// The knob turned by this many detents.
    case step(Int)
}

/// `%XX` decoded; nil for a bad escape or bytes that are not UTF-8.
func percentDecoded(_ s: Substring) -> String? {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(s.utf8.count)
    var it = s.utf8.makeIterator()
    while let b = it.next() {
        guard b == UInt8(ascii: "%") else {
            bytes.append(b)
            continue
        }
        guard let h = it.next().flatMap(hexValue), let l = it.next().flatMap(hexValue) else { return nil }
        bytes.append(h << 4 | l)
    }
    return String(validating: bytes, as: UTF8.self)
}

private func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
    default: nil
    }
}
