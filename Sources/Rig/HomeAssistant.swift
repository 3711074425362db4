import JSON
import Vocabulary

/// Home Assistant's MQTT discovery for one station: the retained config messages that make
/// the station a device in Home Assistant, with
/// - a connectivity `binary_sensor` fed by `<prefix>/<station>/status` (`online`/`offline`,
///   the retained birth and the last will);
/// - a device trigger (`device_automation`) per button and gesture: type
///   `button_short_press` (click), `button_long_press`, `button_double_press`, subtype
///   `primary`/`secondary`, read from the capture events the station already publishes
///   (``RigTopics/event(_:)``, `capture`) through a `value_template`;
/// - `button` entities that send `{"command":"photo"}`, `video-start` and `video-stop` to
///   `<prefix>/<station>/trigger`, available while the station is `online`;
/// - a `camera` entity whose image is the latest photo, published as JPEG bytes, retained,
///   on ``RigTopics/photo`` (docs/mqtt.md#home-assistant), available while the station is
///   `online`; with a live view, its addresses (``StationLinks``) are the device's
///   `configuration_url` and the camera's attributes.
///
/// Topics are `<discoveryPrefix>/<component>/<node>/<object>/config` (``nodeID``).
/// Published, retained, on every connection (the broker or Home Assistant may have
/// restarted without them); emptied on a clean stop (``removals``), which removes the
/// station's entities and device from Home Assistant until it connects again.
public struct HomeAssistantDiscovery: Sendable, Hashable {
    public static let defaultPrefix = "homeassistant"

    public let topics: RigTopics
    public let discoveryPrefix: String
    /// Where the station's live view is watched from, when it has one.
    public let links: StationLinks?

    /// Nil when the station has discovery off.
    public init?(_ settings: RigSettings, links: StationLinks? = nil) {
        guard let prefix = settings.discoveryPrefix else { return nil }
        topics = RigTopics(settings)
        discoveryPrefix = prefix
        self.links = links
    }

    /// The station in Home Assistant's device registry and in every `unique_id`:
    /// `evcapture:<prefix>/<station>`, unique wherever the station's topics are.
    var identifier: String { "evcapture:\(topics.settings.prefix)/\(topics.settings.station)" }

    /// The node level of discovery topics: `<prefix>_<station>` with `/` and `.` as `_`
    /// (Home Assistant takes only letters, digits, `_` and `-` there).
    var nodeID: String {
        let raw = "\(topics.settings.prefix)_\(topics.settings.station)"
        return String(String.UnicodeScalarView(raw.unicodeScalars.map { $0 == "/" || $0 == "." ? "_" : $0 }))
    }

    /// The device-trigger type of a gesture.
    static func triggerType(_ gesture: Gesture) -> String {
        switch gesture {
        case .click: "button_short_press"
        case .longPress: "button_long_press"
        case .doubleClick: "button_double_press"
        }
    }

    /// What the trigger's `value_template` makes of a capture event: `<action>:<gesture>`
    /// (`primary:click`), or empty for an event that decides no gesture (`began`, a
    /// long press's `ended`). A trigger fires when it equals its `payload`.
    static let gestureTemplate = "{{ value_json.action ~ ':' ~ value_json.gesture if 'gesture' in value_json else '' }}"

    /// Every discovery config, in a fixed order: status, triggers, buttons, camera.
    var configs: [MQTTMessage] {
        var out = [config("binary_sensor", "status", status)]
        for action in CaptureAction.allCases {
            for gesture in Gesture.allCases {
                out.append(config("device_automation", "\(action.rawValue)-\(gesture.rawValue)", trigger(action, gesture)))
            }
        }
        for command in CaptureCommand.allCases {
            out.append(config("button", command.rawValue, button(command)))
        }
        out.append(config("camera", "photo", camera))
        return out
    }

    /// The discovery configs, then the camera's attributes (the live view's addresses), when
    /// there is a live view. Retained, QoS 1.
    public var messages: [MQTTMessage] {
        guard let links else { return configs }
        return configs + [MQTTMessage(topic: topics.links, payload: Array(links.attributes.encoded.utf8), qos: .atLeastOnce, retain: true)]
    }

    /// What a clean stop publishes: every discovery config emptied (retained, QoS 1), which
    /// Home Assistant takes as its entity removed — the status sensor, the triggers, the
    /// buttons and the camera alike (docs/mqtt.md#home-assistant). The latest photo and the
    /// addresses stay retained: the camera shows them again when the station is back.
    public var removals: [MQTTMessage] {
        configs.map { MQTTMessage(topic: $0.topic, payload: [], qos: .atLeastOnce, retain: true) }
    }

    func config(_ component: String, _ object: String, _ payload: JSONValue) -> MQTTMessage {
        MQTTMessage(
            topic: "\(discoveryPrefix)/\(component)/\(nodeID)/\(object)/config", payload: Array(payload.encoded.utf8),
            qos: .atLeastOnce, retain: true)
    }

    // The payloads, with Home Assistant's snake-case keys, in alphabetical order.

    /// An object with its keys in alphabetical order.
    static func object(_ fields: [(String, JSONValue)]) -> JSONValue { .object(fields.sorted { $0.0 < $1.0 }) }

    var device: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("identifiers", .array([.string(identifier)])), ("name", .string(topics.settings.station)),
            ("manufacturer", "evcapture"), ("model", "capture station"),
        ]
        if let links { fields.append(("configuration_url", .string(links.page))) }
        return Self.object(fields)
    }

    static let origin = object([("name", "evcapture")])

    /// No availability of its own: an `offline` station shows as disconnected, not as unknown.
    var status: JSONValue {
        Self.object([
            ("name", "Online"), ("unique_id", .string("\(identifier):status")), ("state_topic", .string(topics.status)),
            ("payload_on", "online"), ("payload_off", "offline"), ("device_class", "connectivity"),
            ("entity_category", "diagnostic"), ("qos", 1), ("device", device), ("origin", Self.origin),
        ])
    }

    func trigger(_ action: CaptureAction, _ gesture: Gesture) -> JSONValue {
        Self.object([
            ("automation_type", "trigger"), ("topic", .string(topics.event("capture"))), ("type", .string(Self.triggerType(gesture))),
            ("subtype", .string(action.rawValue)), ("payload", .string("\(action.rawValue):\(gesture.rawValue)")),
            ("value_template", .string(Self.gestureTemplate)), ("qos", 1), ("device", device), ("origin", Self.origin),
        ])
    }

    func button(_ command: CaptureCommand) -> JSONValue {
        let (name, icon) =
            switch command {
            case .photo: ("Photo", "mdi:camera")
            case .videoStart: ("Start video", "mdi:record-rec")
            case .videoStop: ("Stop video", "mdi:stop")
            }
        return Self.object([
            ("name", .string(name)), ("unique_id", .string("\(identifier):\(command.rawValue)")),
            ("command_topic", .string(topics.ownTrigger)), ("payload_press", .string(TriggerMessage(command: command).json)),
            ("availability_topic", .string(topics.status)), ("payload_available", "online"), ("payload_not_available", "offline"),
            ("icon", .string(icon)), ("qos", 1), ("device", device), ("origin", Self.origin),
        ])
    }

    /// The latest photo as the camera's still image: raw JPEG bytes (no `image_encoding`).
    var camera: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("name", "Latest photo"), ("unique_id", .string("\(identifier):photo")), ("topic", .string(topics.photo)),
            ("availability_topic", .string(topics.status)), ("payload_available", "online"), ("payload_not_available", "offline"),
            ("icon", "mdi:camera-iris"), ("device", device), ("origin", Self.origin),
        ]
        if links != nil { fields.append(("json_attributes_topic", .string(topics.links))) }
        return Self.object(fields)
    }
}

/// Where a station's live view is watched from (docs/live-view.md#which-way-to-watch): the
/// page, the MJPEG stream, and the RTSP URL when RTSP is on. Host names are what the
/// station is reachable by (its host name when it listens on every address).
public struct StationLinks: Sendable, Hashable {
    public var page: String
    public var mjpeg: String
    public var rtsp: String?

    public init(page: String, mjpeg: String, rtsp: String? = nil) {
        self.page = page
        self.mjpeg = mjpeg
        self.rtsp = rtsp
    }

    /// The camera entity's attributes, in alphabetical order.
    public var attributes: JSONValue {
        var fields: [(String, JSONValue)] = [("live_view", .string(page)), ("mjpeg_url", .string(mjpeg))]
        if let rtsp { fields.append(("rtsp_url", .string(rtsp))) }
        return HomeAssistantDiscovery.object(fields)
    }
}
