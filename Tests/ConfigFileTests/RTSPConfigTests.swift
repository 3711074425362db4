import ConfigFile
import RTSP
import Testing

/// `[rtsp]` (docs/configuration.md#rtsp): closed without the table, loopback port 8554 by
/// default, the live view's credentials, and the same rule as the live view's for other addresses.
@Suite struct RTSPConfigTests {
    @Test func noTableMeansNoServer() throws {
        #expect(try Config.parse("[http]\n", file: "c.toml").daemon.rtsp == nil)
    }

    @Test func anEmptyTableListensOnLoopbackPort8554WithoutCredentials() throws {
        let rtsp = try #require(try Config.parse("[rtsp]\n", file: "c.toml").daemon.rtsp)
        #expect(rtsp.host == "127.0.0.1" && rtsp.port == 8554)
        #expect(rtsp.username == nil && rtsp.password == nil)
        #expect(rtsp.url(hostName: "cam") == "rtsp://127.0.0.1:8554/live")
    }

    /// The live view's credentials are RTSP's, on loopback too.
    @Test func theLiveViewsCredentialsAreAskedFor() throws {
        let c = try Config.parse(
            """
            [http]
            listen = "0.0.0.0:8080"
            username = "viewer"
            password = "correct horse"

            [rtsp]
            listen = "0.0.0.0:9554"
            """, file: "c.toml")
        let rtsp = try #require(c.daemon.rtsp)
        #expect(rtsp.host == "0.0.0.0" && rtsp.port == 9554)
        #expect(rtsp.username == "viewer" && rtsp.password == "correct horse")
        #expect(rtsp.url(hostName: "porch") == "rtsp://porch:9554/live")
        let loopback = try #require(
            try Config.parse("[http]\nusername = \"v\"\npassword = \"12345678\"\n[rtsp]\nlisten = \"[::1]:8554\"\n", file: "c.toml").daemon
                .rtsp)
        #expect(loopback.username == "v" && loopback.url(hostName: "x") == "rtsp://[::1]:8554/live")
    }

    static let bad: [(String, String)] = [
        ("[rtsp]\nport = 1\n", "bad.toml:2: unknown key \"port\" in [rtsp] (known: listen)"),
        (
            "[rtsp]\nlisten = \"0.0.0.0:8554\"\n",
            "bad.toml:2: rtsp.listen \"0.0.0.0:8554\" is reachable from other machines: set http.username and http.password (RTSP clients give the live view's credentials), or listen on 127.0.0.1"
        ),
        (
            "[http]\nlisten = \"127.0.0.1:8080\"\n[rtsp]\nlisten = \"192.168.1.5:8554\"\n",
            "bad.toml:4: rtsp.listen \"192.168.1.5:8554\" is reachable from other machines: set http.username and http.password (RTSP clients give the live view's credentials), or listen on 127.0.0.1"
        ),
        ("[rtsp]\nlisten = \"127.0.0.1:65536\"\n", "bad.toml:2: rtsp.listen: \"127.0.0.1:65536\": the port must be between 1 and 65535"),
        (
            "[rtsp]\nlisten = \"cam.lan:8554\"\n",
            "bad.toml:2: rtsp.listen: \"cam.lan:8554\": the host must be an IP address (or localhost), not a name"
        ),
    ]

    @Test(arguments: bad)
    func badTablesNameFileLineAndKey(_ text: String, _ message: String) {
        do {
            _ = try Config.parse(text, file: "bad.toml")
            Issue.record("accepted: \(text)")
        } catch {
            #expect("\(error)" == message)
        }
    }

    /// Both ends of the port range are taken.
    @Test(arguments: [1, 65535])
    func portsAtBothEnds(_ port: Int) throws {
        #expect(try Config.parse("[rtsp]\nlisten = \"127.0.0.1:\(port)\"\n", file: "c.toml").daemon.rtsp?.port == port)
    }
}
