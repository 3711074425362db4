import Actions
import Capture
import FoundationEssentials
import MQTT

/// Home Assistant's MQTT discovery for one station: the retained config messages that make
/// the station a device in Home Assistant, with
/// - a connectivity `binary_sensor` fed by `<prefix>/<station>/status` (`online`/`offline`,
///   the retained birth and the last will);
/// - a device trigger (`device_automation`) per button and gesture: type
///   `button_short_press` (click), `button_long_press`, `button_double_press`, subtype
///   `primary`/`secondary`, read from the capture events the station already publishes
///   (``RigTopics/event(_:)``, `capture`) through a `value_template`;
/// - `button` entities that send `{"command":"photo"}`, `video-start` and `video-stop` to
///   `<prefix>/<station>/trigger`, available while the station is `online`.
///
/// Topics are `<discoveryPrefix>/<component>/<node>/<object>/config` (``nodeID``).
/// Published, retained, on every connection (the broker or Home Assistant may have
/// restarted without them).
public struct HomeAssistantDiscovery: Sendable, Hashable {
    public static let defaultPrefix = "homeassistant"

    public let topics: RigTopics
    public let discoveryPrefix: String

    /// Nil when the station has discovery off.
    public init?(_ settings: RigSettings) {
        guard let prefix = settings.discoveryPrefix else { return nil }
        topics = RigTopics(settings)
        discoveryPrefix = prefix
    }

    /// The station in Home Assistant's device registry and in every `unique_id`:
    /// `evcapture:<prefix>/<station>`, unique wherever the station's topics are.
    public var identifier: String { "evcapture:\(topics.settings.prefix)/\(topics.settings.station)" }

    /// The node level of discovery topics: `<prefix>_<station>` with `/` and `.` as `_`
    /// (Home Assistant takes only letters, digits, `_` and `-` there).
    public var nodeID: String {
        let raw = "\(topics.settings.prefix)_\(topics.settings.station)"
        return String(String.UnicodeScalarView(raw.unicodeScalars.map { $0 == "/" || $0 == "." ? "_" : $0 }))
    }

    /// The device-trigger type of a gesture.
    public static func triggerType(_ gesture: Gesture) -> String {
        switch gesture {
        case .click: "button_short_press"
        case .longPress: "button_long_press"
        case .doubleClick: "button_double_press"
        }
    }

    /// What the trigger's `value_template` makes of a capture event: `<action>:<gesture>`
    /// (`primary:click`), or empty for an event that decides no gesture (`began`, a
    /// long press's `ended`). A trigger fires when it equals its `payload`.
    public static let gestureTemplate = "{{ value_json.action ~ ':' ~ value_json.gesture if 'gesture' in value_json else '' }}"

    /// Every discovery config, in a fixed order: status, triggers, buttons. Retained, QoS 1.
    public var messages: [MQTTMessage] {
        var out = [config("binary_sensor", "status", status)]
        for action in CaptureAction.allCases {
            for gesture in Gesture.allCases {
                let trigger = DeviceTrigger(
                    topic: topics.event("capture"), type: Self.triggerType(gesture), subtype: action.rawValue,
                    payload: "\(action.rawValue):\(gesture.rawValue)", valueTemplate: Self.gestureTemplate, device: device)
                out.append(config("device_automation", "\(action.rawValue)-\(gesture.rawValue)", trigger))
            }
        }
        for command in CaptureCommand.allCases {
            out.append(config("button", command.rawValue, button(command)))
        }
        return out
    }

    func config(_ component: String, _ object: String, _ payload: some Encodable) -> MQTTMessage {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        // Only strings, lists and numbers: encoding cannot fail.
        let json = try! encoder.encode(payload)
        return MQTTMessage(
            topic: "\(discoveryPrefix)/\(component)/\(nodeID)/\(object)/config", payload: Array(json), qos: .atLeastOnce, retain: true)
    }

    // The payloads, with Home Assistant's keys in camel case (encoded as snake case).

    struct Device: Encodable, Hashable {
        var identifiers: [String]
        var name: String
        var manufacturer = "evcapture"
        var model = "capture station"
    }

    struct Origin: Encodable, Hashable {
        var name = "evcapture"
    }

    struct StatusSensor: Encodable {
        var name = "Online"
        var uniqueId: String
        var stateTopic: String
        var payloadOn = "online"
        var payloadOff = "offline"
        var deviceClass = "connectivity"
        var entityCategory = "diagnostic"
        var qos = 1
        var device: Device
        var origin = Origin()
    }

    struct DeviceTrigger: Encodable {
        var automationType = "trigger"
        var topic: String
        var type: String
        var subtype: String
        var payload: String
        var valueTemplate: String
        var qos = 1
        var device: Device
        var origin = Origin()
    }

    struct Button: Encodable {
        var name: String
        var uniqueId: String
        var commandTopic: String
        var payloadPress: String
        var availabilityTopic: String
        var payloadAvailable = "online"
        var payloadNotAvailable = "offline"
        var icon: String
        var qos = 1
        var device: Device
        var origin = Origin()
    }

    var device: Device { Device(identifiers: [identifier], name: topics.settings.station) }

    /// No availability of its own: an `offline` station shows as disconnected, not as unknown.
    var status: StatusSensor {
        StatusSensor(uniqueId: "\(identifier):status", stateTopic: topics.status, device: device)
    }

    func button(_ command: CaptureCommand) -> Button {
        let (name, icon) =
            switch command {
            case .photo: ("Photo", "mdi:camera")
            case .videoStart: ("Start video", "mdi:record-rec")
            case .videoStop: ("Stop video", "mdi:stop")
            }
        return Button(
            name: name, uniqueId: "\(identifier):\(command.rawValue)", commandTopic: topics.ownTrigger,
            payloadPress: TriggerMessage(command: command).json, availabilityTopic: topics.status, icon: icon, device: device)
    }
}
