import ConfigFile
import MQTT
import Rig
import Testing

#if canImport(Glibc)
import Glibc
import Vocabulary
#endif

@Suite struct MQTTConfigTests {
    @Test func noMQTTTableMeansNoBroker() throws {
        let c = try Config.parse("[socket]\npath = \"/run/x.sock\"\n", file: "c.toml")
        #expect(c.daemon.mqtt == nil)
        #expect(c.daemon.rig == nil)
    }

    @Test func everyKeyIsRead() throws {
        let c = try Config.parse(
            """
            [mqtt]
            url = "mqtts://broker.lan:8884"
            ca-file = "/etc/evcapture/ca.pem"
            username = "rig"
            password-file = "/etc/evcapture/mqtt-password"
            station = "cam-3"
            prefix = "studio/rig"
            groups = ["left", "ring.2"]
            fan-out = "left"
            keepalive = 20
            offline-queue = 50
            """, file: "c.toml")
        let mqtt = try #require(c.daemon.mqtt)
        let rig = try #require(c.daemon.rig)
        #expect(mqtt.broker == MQTTBroker(host: "broker.lan", port: 8884, tls: true))
        #expect(mqtt.caFile == "/etc/evcapture/ca.pem")
        #expect(mqtt.username == "rig" && mqtt.passwordFile == "/etc/evcapture/mqtt-password")
        #expect(mqtt.clientID == "cam-3")
        #expect(mqtt.keepalive == 20 && mqtt.offlineQueueLimit == 50)
        #expect(rig == RigSettings(station: "cam-3", prefix: "studio/rig", groups: ["left", "ring.2"], fanOut: .group("left")))
        // Status: retained online on connect, retained offline as the will.
        #expect(mqtt.birth == MQTTMessage(topic: "studio/rig/cam-3/status", text: "online", qos: .atLeastOnce, retain: true))
        #expect(mqtt.will == MQTTMessage(topic: "studio/rig/cam-3/status", text: "offline", qos: .atLeastOnce, retain: true))
        #expect(
            mqtt.subscriptions.map(\.topic) == [
                "studio/rig/cam-3/trigger", "studio/rig/all/trigger", "studio/rig/group/left/trigger",
                "studio/rig/group/ring.2/trigger",
            ])
        #expect(mqtt.subscriptions.allSatisfy { $0.qos == .atLeastOnce })
    }

    @Test func defaultsAreTheHostNameAndEvcapture() throws {
        let c = try Config.parse("[mqtt]\nurl = \"mqtt://127.0.0.1\"\n", file: "c.toml")
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, 255)
        let host = String(String(cString: buffer).split(separator: ".").first ?? "")
        let rig = try #require(c.daemon.rig)
        #expect(rig.station == host)
        #expect(rig.prefix == "evcapture" && rig.groups.isEmpty && rig.fanOut == .none)
        let mqtt = try #require(c.daemon.mqtt)
        #expect(mqtt.broker == MQTTBroker(host: "127.0.0.1", port: 1883, tls: false))
        #expect(mqtt.clientID == host)
        #expect(mqtt.username == nil && mqtt.passwordFile == nil && mqtt.caFile == nil)
        #expect(mqtt.keepalive == 60 && mqtt.offlineQueueLimit == 1000)
    }

    @Test func fanOutAllAndIPv6() throws {
        let c = try Config.parse("[mqtt]\nurl = \"mqtt://[::1]:1884\"\nstation = \"a\"\nfan-out = \"all\"\n", file: "c.toml")
        #expect(c.daemon.mqtt?.broker == MQTTBroker(host: "::1", port: 1884, tls: false))
        #expect(c.daemon.mqtt?.broker.description == "mqtt://[::1]:1884")
        #expect(c.daemon.rig?.fanOut == .all)
    }

    /// Home Assistant discovery: on by default under `homeassistant`, announced on every
    /// connection (the client's announcements are filled in by the daemon's rig link).
    @Test func discoveryIsOnByDefault() throws {
        let c = try Config.parse("[mqtt]\nurl = \"mqtt://x\"\nstation = \"a\"\n", file: "c.toml")
        #expect(c.daemon.rig?.discoveryPrefix == "homeassistant")
    }

    @Test func discoveryCanBeMovedOrTurnedOff() throws {
        let moved = try Config.parse("[mqtt]\nurl = \"mqtt://x\"\nstation = \"a\"\ndiscovery-prefix = \"ha/test\"\n", file: "c.toml")
        #expect(moved.daemon.rig?.discoveryPrefix == "ha/test")
        let on = try Config.parse(
            "[mqtt]\nurl = \"mqtt://x\"\nstation = \"a\"\ndiscovery = true\ndiscovery-prefix = \"hass\"\n", file: "c.toml")
        #expect(on.daemon.rig?.discoveryPrefix == "hass")
        let off = try Config.parse("[mqtt]\nurl = \"mqtt://x\"\nstation = \"a\"\ndiscovery = false\n", file: "c.toml")
        let rig = try #require(off.daemon.rig)
        #expect(rig.discoveryPrefix == nil)
        #expect(HomeAssistantDiscovery(rig) == nil)
    }

    /// Each bad [mqtt] table and its exact error: file, line, problem.
    static let bad: [(String, String)] = [
        ("[mqtt]\nstation = \"a\"\n", "m.toml:1: [mqtt] needs url = \"mqtt://host:1883\" (or mqtts://host:8883)"),
        (
            "[mqtt]\nurl = \"http://x\"\n",
            "m.toml:2: mqtt.url: \"http://x\" is not an MQTT URL (use mqtt://host:port or mqtts://host:port)"
        ),
        ("[mqtt]\nurl = \"mqtt://x:0\"\n", "m.toml:2: mqtt.url: \"mqtt://x:0\" has a bad port \"0\" (1…65535)"),
        ("[mqtt]\nurl = \"mqtt://x:http\"\n", "m.toml:2: mqtt.url: \"mqtt://x:http\" has a bad port \"http\" (1…65535)"),
        (
            "[mqtt]\nurl = \"mqtt://user:pw@x\"\n",
            "m.toml:2: mqtt.url: \"mqtt://user:pw@x\" has a path, a query or a user part; only mqtt(s)://host:port is allowed (credentials go in username and password-file)"
        ),
        ("[mqtt]\nurl = \"mqtt://\"\n", "m.toml:2: mqtt.url: \"mqtt://\" has no host"),
        (
            "[mqtt]\nurl = \"mqtt://x\"\nca-file = \"/ca.pem\"\n",
            "m.toml:3: mqtt.ca-file is for mqtts:// URLs; mqtt://x:1883 is not encrypted"
        ),
        ("[mqtt]\nurl = \"mqtt://x\"\npassword-file = \"/p\"\n", "m.toml:3: mqtt.password-file needs mqtt.username"),
        (
            "[mqtt]\nurl = \"mqtt://x\"\nstation = \"cam/1\"\n",
            "m.toml:3: mqtt.station \"cam/1\" has '/' (use letters, digits, '-', '_' and '.')"
        ),
        (
            "[mqtt]\nurl = \"mqtt://x\"\nstation = \"cam+\"\n",
            "m.toml:3: mqtt.station \"cam+\" has '+' (use letters, digits, '-', '_' and '.')"
        ),
        ("[mqtt]\nurl = \"mqtt://x\"\nstation = \"all\"\n", "m.toml:3: mqtt.station cannot be \"all\" (a topic of the rig's own)"),
        ("[mqtt]\nurl = \"mqtt://x\"\nstation = \"\"\n", "m.toml:3: mqtt.station \"\" is empty"),
        ("[mqtt]\nurl = \"mqtt://x\"\nprefix = \"a//b\"\n", "m.toml:3: mqtt.prefix \"a//b\" has a level that is empty"),
        (
            "[mqtt]\nurl = \"mqtt://x\"\nprefix = \"#\"\n",
            "m.toml:3: mqtt.prefix \"#\" has a level that has '#' (use letters, digits, '-', '_' and '.')"
        ),
        (
            "[mqtt]\nurl = \"mqtt://x\"\nfan-out = \"every one\"\n",
            "m.toml:3: mqtt.fan-out must be \"none\", \"all\" or a group name; \"every one\" has ' ' (use letters, digits, '-', '_' and '.')"
        ),
        ("[mqtt]\nurl = \"mqtt://x\"\ngroups = [\"ok\", \"\"]\n", "m.toml:3: mqtt.groups: \"\" is empty"),
        ("[mqtt]\nurl = \"mqtt://x\"\nkeepalive = 1\n", "m.toml:3: mqtt.keepalive must be between 5 and 3600, not 1"),
        (
            "[mqtt]\nurl = \"mqtt://x\"\npassword = \"hunter2\"\n",
            "m.toml:3: unknown key \"password\" in [mqtt] (known: url, username, password-file, ca-file, station, prefix, groups, fan-out, keepalive, offline-queue, discovery, discovery-prefix)"
        ),
        ("mqtt = \"mqtt://x\"\n", "m.toml:1: mqtt must be a table, not \"mqtt://x\""),
        ("[mqtt]\nurl = \"mqtt://x\"\ndiscovery = \"no\"\n", "m.toml:3: mqtt.discovery must be true or false, not \"no\""),
        ("[mqtt]\nurl = \"mqtt://x\"\ndiscovery-prefix = 1\n", "m.toml:3: mqtt.discovery-prefix must be a string, not 1"),
        (
            "[mqtt]\nurl = \"mqtt://x\"\ndiscovery-prefix = \"home+assistant\"\n",
            "m.toml:3: mqtt.discovery-prefix \"home+assistant\" has a level that has '+' (use letters, digits, '-', '_' and '.')"
        ),
        (
            "[mqtt]\nurl = \"mqtt://x\"\ndiscovery = false\ndiscovery-prefix = \"ha\"\n",
            "m.toml:4: mqtt.discovery-prefix is set but discovery = false (remove one)"
        ),
    ]

    @Test(arguments: bad)
    func badTablesNameFileLineAndProblem(_ text: String, _ expected: String) {
        do {
            _ = try Config.parse(text, file: "m.toml")
            Issue.record("accepted: \(text)")
        } catch {
            #expect("\(error)" == expected)
        }
    }
}
