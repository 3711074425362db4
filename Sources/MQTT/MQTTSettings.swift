import Vocabulary

/// Where the broker is: `mqtt://host[:port]` (default port 1883) or `mqtts://host[:port]`
/// (TLS, default port 8883). IPv6 addresses go in brackets: `mqtt://[::1]:1883`.
public struct MQTTBroker: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// TLS (`mqtts://`), with the broker's certificate verified.
    public var tls: Bool

    public init(host: String, port: Int, tls: Bool) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// Parses a broker URL; the error says what is wrong with it.
    public init(url: String) throws(MQTTSettingsError) {
        let tls: Bool
        let rest: Substring
        if url.hasPrefix("mqtt://") {
            tls = false
            rest = url.dropFirst("mqtt://".count)
        } else if url.hasPrefix("mqtts://") {
            tls = true
            rest = url.dropFirst("mqtts://".count)
        } else {
            throw MQTTSettingsError("\"\(url)\" is not an MQTT URL (use mqtt://host:port or mqtts://host:port)")
        }
        var authority = rest
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard !authority.contains("/"), !authority.contains("@"), !authority.contains("?") else {
            throw MQTTSettingsError(
                "\"\(url)\" has a path, a query or a user part; only mqtt(s)://host:port is allowed (credentials go in username and password-file)"
            )
        }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw MQTTSettingsError("\"\(url)\" has an unclosed '['") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw MQTTSettingsError("\"\(url)\": expected ':port' after ']'") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw MQTTSettingsError("\"\(url)\" has no host") }
        var port = tls ? 8883 : 1883
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw MQTTSettingsError("\"\(url)\" has a bad port \"\(portText)\" (1…65535)")
            }
            port = p
        }
        self.init(host: String(host), port: port, tls: tls)
    }

    /// The URL back: `mqtt://host:port`.
    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(tls ? "mqtts" : "mqtt")://\(h):\(port)"
    }
}

/// A bad MQTT setting (the config layer adds the file and line).
public struct MQTTSettingsError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// How the client connects: broker, identity, credentials, TLS, and its status messages.
public struct MQTTConnectionSettings: Sendable, Hashable {
    public var broker: MQTTBroker
    /// The MQTT client id (the station name): unique per broker, the broker drops an older
    /// connection with the same id.
    public var clientID: String
    public var username: String?
    /// A file holding the password (its first line; read when the client starts, never
    /// logged). Credentials never come from the command line.
    public var passwordFile: String?
    /// CA certificates (PEM) for `mqtts://`; nil: the system's CA store. The broker's
    /// certificate and host name are always verified.
    public var caFile: String?
    /// Seconds between keepalive pings when nothing else is sent.
    public var keepalive: Int
    /// Published (retained) each time a connection is accepted: the station is `online`.
    public var birth: MQTTMessage?
    /// The broker publishes it when the connection dies without a DISCONNECT (a killed
    /// daemon, a pulled cable); the client publishes it itself when it stops cleanly.
    public var will: MQTTMessage?
    /// Published after the birth message on every connection, before the offline queue:
    /// retained state the broker may have lost while away (Home Assistant discovery).
    public var announcements: [MQTTMessage] = []
    /// Published on a clean stop, before the will: retained state taken back (Home
    /// Assistant's discovery configs, emptied: the station's entities are removed). A stop
    /// while the broker is away cannot send them; the next connection's announcements
    /// replace what stayed.
    public var farewells: [MQTTMessage] = []
    /// Topics subscribed on every connection (clean sessions: nothing is kept in between).
    public var subscriptions: [(topic: String, qos: QoS)]
    /// Messages kept while there is no connection; the oldest are dropped beyond it.
    public var offlineQueueLimit: Int
    /// The first reconnect delay, doubled after each failure up to `maximumBackoff`.
    var initialBackoff: Duration
    public var maximumBackoff: Duration
    /// A connection attempt (TCP, TLS and the broker's CONNACK) that takes longer is given up.
    public var connectTimeout: Duration

    public init(
        broker: MQTTBroker, clientID: String, username: String? = nil, passwordFile: String? = nil, caFile: String? = nil,
        keepalive: Int = 60, birth: MQTTMessage? = nil, will: MQTTMessage? = nil, subscriptions: [(topic: String, qos: QoS)] = [],
        offlineQueueLimit: Int = 1000, initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(30),
        connectTimeout: Duration = .seconds(10)
    ) {
        self.broker = broker
        self.clientID = clientID
        self.username = username
        self.passwordFile = passwordFile
        self.caFile = caFile
        self.keepalive = keepalive
        self.birth = birth
        self.will = will
        self.subscriptions = subscriptions
        self.offlineQueueLimit = offlineQueueLimit
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.connectTimeout = connectTimeout
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.broker == b.broker && a.clientID == b.clientID && a.username == b.username && a.passwordFile == b.passwordFile
            && a.caFile == b.caFile && a.keepalive == b.keepalive && a.birth == b.birth && a.will == b.will
            && a.announcements == b.announcements && a.farewells == b.farewells
            && a.subscriptions.map(\.topic) == b.subscriptions.map(\.topic) && a.subscriptions.map(\.qos) == b.subscriptions.map(\.qos)
            && a.offlineQueueLimit == b.offlineQueueLimit && a.initialBackoff == b.initialBackoff
            && a.maximumBackoff == b.maximumBackoff && a.connectTimeout == b.connectTimeout
    }
    public func hash(into h: inout Hasher) {
        h.combine(broker)
        h.combine(clientID)
    }
}

/// The reconnect delays: `initial`, doubled after each failed attempt up to `maximum`;
/// back to `initial` once a connection is accepted.
struct Backoff: Sendable, Hashable {
    public let initial: Duration
    public let maximum: Duration
    public private(set) var next: Duration

    public init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        next = initial
    }

    /// The delay before the next attempt; the one after it is doubled.
    public mutating func failed() -> Duration {
        let d = next
        next = min(next * 2, maximum)
        return d
    }

    public mutating func succeeded() { next = initial }
}
