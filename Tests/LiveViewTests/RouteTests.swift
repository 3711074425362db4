@testable import LiveView
import Testing

@Suite struct RouteTests {
    static let table: [(String, String, Route)] = [
        ("GET", "/", .page),
        ("GET", "/index.html", .page),
        ("GET", "/stream.mjpg", .stream),
        ("GET", "/stream.mjpg?t=123", .stream),
        ("GET", "/snapshot.jpg", .snapshot),
        ("GET", "/events", .events),
        ("GET", "/api/media", .mediaList),
        ("GET", "/media/photo%20one.jpg", .media("photo one.jpg")),
        ("POST", "/api/capture", .input(.capture)),
        ("POST", "/api/control/next", .input(.nextControl)),
        ("POST", "/api/control/step?by=-3", .input(.step(-3))),
        ("POST", "/api/control/step?x=1&by=2", .input(.step(2))),
        // Changing requests are POST only; reading ones GET only.
        ("GET", "/api/capture", .methodNotAllowed(allow: "POST")),
        ("PUT", "/api/control/next", .methodNotAllowed(allow: "POST")),
        ("POST", "/stream.mjpg", .methodNotAllowed(allow: "GET, HEAD")),
        ("DELETE", "/media/a.jpg", .methodNotAllowed(allow: "GET, HEAD")),
        ("HEAD", "/snapshot.jpg", .snapshot),
        ("HEAD", "/media/a.jpg", .media("a.jpg")),
        ("POST", "/api/control/step", .badRequest("by must be a whole number of steps, -100 to 100, not 0")),
        ("POST", "/api/control/step?by=0", .badRequest("by must be a whole number of steps, -100 to 100, not 0")),
        ("POST", "/api/control/step?by=1000", .badRequest("by must be a whole number of steps, -100 to 100, not 0")),
        ("GET", "/nothing", .notFound),
        ("GET", "/media/", .notFound),
        // Nothing outside the output directory, however it is spelt.
        ("GET", "/media/..", .notFound),
        ("GET", "/media/../etc/passwd", .notFound),
        ("GET", "/media/..%2F..%2Fetc%2Fpasswd", .notFound),
        ("GET", "/media/%2Fetc%2Fpasswd", .notFound),
        ("GET", "/media/a%00.jpg", .notFound),
        ("GET", "/media/.evcapture-1.jpg.part", .notFound),
        ("GET", "/media/%zz", .badRequest("the path is not valid percent-encoded UTF-8")),
        ("GET", "/media/%ff.jpg", .badRequest("the path is not valid percent-encoded UTF-8")),
        // WHEP (docs/live-view.md#webrtc): an offer is a POST, a session's end a DELETE of its resource.
        ("POST", "/api/whep", .whepOffer),
        ("GET", "/api/whep", .methodNotAllowed(allow: "POST")),
        ("DELETE", "/api/whep", .methodNotAllowed(allow: "POST")),
        ("DELETE", "/api/whep/0123abcd-EF", .whepEnd("0123abcd-EF")),
        ("DELETE", "/api/whep/" + String(repeating: "a", count: 64), .whepEnd(String(repeating: "a", count: 64))),
        ("DELETE", "/api/whep/" + String(repeating: "a", count: 65), .notFound),
        ("PATCH", "/api/whep/abc", .methodNotAllowed(allow: "DELETE")),
        ("GET", "/api/whep/abc", .methodNotAllowed(allow: "DELETE")),
        ("DELETE", "/api/whep/", .notFound),
        ("DELETE", "/api/whep/a%2F..", .notFound),
        ("DELETE", "/api/whep/a.b", .notFound),
    ]

    @Test(arguments: table)
    func routes(_ method: String, _ target: String, _ expected: Route) {
        #expect(Route(method: method, target: target) == expected, "\(method) \(target)")
    }
}
