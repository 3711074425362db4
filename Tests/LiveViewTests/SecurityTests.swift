@testable import LiveView
import Testing

@Suite struct SecurityTests {
    let credentials = Credentials(username: "viewer", password: "open sesame")

    @Test func basicAuthAcceptsOnlyTheRightPair() {
        // "viewer:open sesame"
        #expect(credentials.accept(authorization: "Basic dmlld2VyOm9wZW4gc2VzYW1l"))
        #expect(credentials.accept(authorization: "basic  dmlld2VyOm9wZW4gc2VzYW1l "))
        #expect(!credentials.accept(authorization: nil))
        #expect(!credentials.accept(authorization: ""))
        #expect(!credentials.accept(authorization: "Bearer dmlld2VyOm9wZW4gc2VzYW1l"))
        // "viewer:open sesamf", "viewer:open sesame!", "viewer:", "viewe:open sesame"
        #expect(!credentials.accept(authorization: "Basic dmlld2VyOm9wZW4gc2VzYW1m"))
        #expect(!credentials.accept(authorization: "Basic dmlld2VyOm9wZW4gc2VzYW1lIQ=="))
        #expect(!credentials.accept(authorization: "Basic dmlld2VyOg=="))
        #expect(!credentials.accept(authorization: "Basic dmlld2U6b3BlbiBzZXNhbWU="))
        // Not base64 at all.
        #expect(!credentials.accept(authorization: "Basic ****"))
        #expect(!credentials.accept(authorization: "Basic dmlld2VyOm9wZW4gc2VzYW1l="))
        #expect(!credentials.accept(authorization: "Basic ="))
    }

    @Test func constantTimeCompare() {
        #expect(constantTimeEqual([], []))
        #expect(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(!constantTimeEqual([1, 2], [1, 2, 0]))
        #expect(!constantTimeEqual([0], []))
    }

    static let origins: [(String?, String?, Bool)] = [
        (nil, "cam:8080", true),  // curl, scripts: no Origin
        ("http://cam:8080", "cam:8080", true),
        ("HTTP://CAM:8080", "cam:8080", true),
        ("http://127.0.0.1:8080", "127.0.0.1:8080", true),
        ("http://cam", "cam:80", true),
        ("https://cam", "cam:443", true),
        ("https://cam:443", "cam", true),
        ("http://[::1]:8080", "[::1]:8080", true),
        ("http://evil.example", "cam:8080", false),
        ("http://cam:8081", "cam:8080", false),
        ("http://cam.evil.example:8080", "cam:8080", false),
        ("null", "cam:8080", false),
        ("file://", "cam:8080", false),
        ("http://user@cam:8080", "cam:8080", false),
        ("http://cam:8080", nil, false),
        ("http://cam:8080", "", false),
    ]

    @Test(arguments: origins)
    func originMustMatchHost(_ origin: String?, _ host: String?, _ allowed: Bool) {
        #expect(originAllowed(origin: origin, host: host) == allowed, "Origin \(origin ?? "-") Host \(host ?? "-")")
    }

    @Test func loopbackAddresses() throws {
        for (text, loopback) in [
            ("127.0.0.1:8080", true), ("127.1.2.3:1", true), ("localhost:80", true), ("[::1]:8080", true),
            ("0.0.0.0:8080", false), ("[::]:8080", false), ("192.0.2.1:8080", false), ("[::ffff:127.0.0.1]:80", false),
        ] {
            let a = try ListenAddress.parse(text).get()
            #expect(a.isLoopback == loopback, "\(text)")
        }
    }

    @Test(
        arguments: [
            ("localhost", true), ("localhost:8080", true), ("LOCALHOST:1", true), ("cam.localhost", true), ("127.0.0.1", true),
            ("127.255.255.254:65535", true), ("[::1]", true), ("[::1]:8080", true), (nil, true),
            ("128.0.0.1", false), ("0.0.0.0:8080", false), ("evil.example", false), ("localhost.evil.example", false),
            ("127.0.0.1.nip.io:8080", false), ("[::2]:8080", false), ("[::1", false), ("localhost:80a", false), ("", false),
            (":8080", false),
        ] as [(String?, Bool)])
    func onlyLoopbackNamesWithoutCredentials(_ host: String?, _ allowed: Bool) {
        #expect(loopbackHostAllowed(host) == allowed, "Host \(host ?? "-")")
    }
}
