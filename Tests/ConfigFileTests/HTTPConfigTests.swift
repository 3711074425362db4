import ConfigFile
import LiveView
import Testing

@Suite struct HTTPConfigTests {
    @Test func noHTTPTableMeansNoServer() throws {
        let c = try Config.parse("[socket]\npath = \"/run/x.sock\"\n", file: "c.toml")
        #expect(c.daemon.http == nil)
    }

    @Test func anEmptyTableListensOnLoopbackPort8080() throws {
        let c = try Config.parse("[http]\n", file: "c.toml")
        let http = try #require(c.daemon.http)
        #expect(http.listen == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(http.credentials == nil && http.tls == nil && http.maxClients == 4)
    }

    @Test func everyKeyIsRead() throws {
        let c = try Config.parse(
            """
            [http]
            listen = "0.0.0.0:8443"
            username = "viewer"
            password = "correct horse"
            certificate = "/dev/null"
            private-key = "/dev/null"
            max-clients = 2
            preview-width = 320
            webrtc = false
            stun-server = "stun://stun.example.net:3478"
            turn-server = "turns://user:secret@turn.example.net:5349"
            """, file: "c.toml")
        let http = try #require(c.daemon.http)
        #expect(http.listen == ListenAddress(host: "0.0.0.0", port: 8443))
        #expect(http.credentials == Credentials(username: "viewer", password: "correct horse"))
        #expect(http.tls == .init(certificate: "/dev/null", privateKey: "/dev/null"))
        #expect(http.maxClients == 2 && http.previewWidth == 320)
        #expect(!http.webRTC && http.stunServer == "stun://stun.example.net:3478")
        #expect(http.turnServer == "turns://user:secret@turn.example.net:5349")
        // docs/live-view.md#webrtc: on by default, no STUN or TURN server.
        let plain = try #require(try Config.parse("[http]\n", file: "c.toml").daemon.http)
        #expect(plain.webRTC && plain.stunServer == nil && plain.turnServer == nil)
    }

    @Test func localhostAndIPv6LoopbackNeedNoCredentials() throws {
        #expect(try Config.parse("[http]\nlisten = \"localhost:9000\"\n", file: "c.toml").daemon.http?.listen.isLoopback == true)
        #expect(try Config.parse("[http]\nlisten = \"[::1]:9000\"\n", file: "c.toml").daemon.http?.listen.isLoopback == true)
    }

    /// Each bad `[http]` and the exact error: file, line of the key, problem.
    static let bad: [(String, String)] = [
        (
            "[http]\nport = 1\n",
            "bad.toml:2: unknown key \"port\" in [http] (known: listen, username, password, certificate, private-key, max-clients, preview-width, webrtc, stun-server, turn-server)"
        ),
        (
            "[http]\n\nlisten = \"0.0.0.0:8080\"\n",
            "bad.toml:3: http.listen \"0.0.0.0:8080\" is reachable from other machines: set http.username and http.password (HTTP Basic), or listen on 127.0.0.1"
        ),
        (
            "[http]\nlisten = \"[::]:8080\"\nusername = \"a\"\n",
            "bad.toml:3: http.username needs http.password"
        ),
        (
            "[http]\nlisten = \"camera.lan:8080\"\n",
            "bad.toml:2: http.listen: \"camera.lan:8080\": the host must be an IP address (or localhost), not a name"
        ),
        ("[http]\nlisten = \"127.0.0.1\"\n", "bad.toml:2: http.listen: \"127.0.0.1\" has no :port"),
        ("[http]\nlisten = \"127.0.0.1:0\"\n", "bad.toml:2: http.listen: \"127.0.0.1:0\": the port must be between 1 and 65535"),
        ("[http]\nlisten = \"::1:80\"\n", "bad.toml:2: http.listen: \"::1:80\": write an IPv6 address in brackets, [::1]:8080"),
        ("[http]\nusername = \"a\"\npassword = \"short\"\n", "bad.toml:3: http.password must be at least 8 characters"),
        ("[http]\nusername = \"a:b\"\npassword = \"long enough\"\n", "bad.toml:2: http.username must be non-empty and without \":\""),
        ("[http]\ncertificate = \"/dev/null\"\n", "bad.toml:2: http.certificate needs http.private-key"),
        (
            "[http]\ncertificate = \"/nonexistent/cert.pem\"\nprivate-key = \"/dev/null\"\n",
            "bad.toml:2: http.certificate: cannot read /nonexistent/cert.pem: No such file or directory"
        ),
        ("[http]\nmax-clients = 0\n", "bad.toml:2: http.max-clients must be between 1 and 64, not 0"),
        ("[http]\nlisten = 8080\n", "bad.toml:2: http.listen must be a string, not 8080"),
        (
            "[http]\nstun-server = \"stun.example.net:3478\"\n",
            "bad.toml:2: http.stun-server \"stun.example.net:3478\" must be stun://HOST:PORT without spaces or quotes"
        ),
        (
            "[http]\n\nturn-server = \"turn://u:p@host:3478 x\"\n",
            "bad.toml:3: http.turn-server \"turn://u:p@host:3478 x\" must be turn://USER:PASSWORD@HOST:PORT (or turns://) without spaces or quotes"
        ),
        (
            "[http]\nstun-server = \"stun://\"\n",
            "bad.toml:2: http.stun-server \"stun://\" must be stun://HOST:PORT without spaces or quotes"
        ),
    ]

    @Test(arguments: bad)
    func badHTTPTablesNameFileLineAndKey(_ text: String, _ message: String) {
        do {
            _ = try Config.parse(text, file: "bad.toml")
            Issue.record("accepted: \(text)")
        } catch {
            #expect("\(error)" == message)
        }
    }
}
