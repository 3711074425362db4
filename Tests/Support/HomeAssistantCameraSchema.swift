import Foundation

/// Home Assistant's MQTT camera, as its documentation gives the discovery payload
/// (home-assistant.io/integrations/camera.mqtt, "Configuration variables", and the device
/// block of the MQTT integration): the one required key, every allowed key with its type,
/// and the allowed values where the page lists them. Keys in full (no abbreviations, which
/// the station does not use).
public enum HomeAssistantCameraSchema {
    public enum Kind: Sendable { case string, bool, object, list }

    static let required = ["topic"]
    static let keys: [String: Kind] = [
        "availability": .list, "availability_mode": .string, "availability_template": .string, "availability_topic": .string,
        "device": .object, "enabled_by_default": .bool, "encoding": .string, "entity_category": .string, "entity_picture": .string,
        "icon": .string, "image_encoding": .string, "json_attributes_template": .string, "json_attributes_topic": .string,
        "name": .string, "object_id": .string, "default_entity_id": .string, "origin": .object, "payload_available": .string,
        "payload_not_available": .string, "platform": .string, "topic": .string, "unique_id": .string,
    ]
    static let values: [String: [String]] = [
        "image_encoding": ["b64"], "availability_mode": ["all", "any", "latest"], "entity_category": ["config", "diagnostic"],
    ]
    static let deviceKeys: Set<String> = [
        "configuration_url", "connections", "hw_version", "identifiers", "manufacturer", "model", "model_id", "name",
        "serial_number", "suggested_area", "sw_version", "via_device",
    ]
    static let originKeys: Set<String> = ["name", "sw_version", "support_url"]

    /// What Home Assistant would refuse in `payload`; empty when it fits.
    public static func problems(_ payload: [String: Any]) -> [String] {
        var out: [String] = []
        for key in required where payload[key] == nil { out.append("\(key) is required") }
        for (key, value) in payload.sorted(by: { $0.key < $1.key }) {
            guard let kind = keys[key] else {
                out.append("\(key) is not a key of an MQTT camera")
                continue
            }
            let fits =
                switch kind {
                case .string: value is String
                case .bool: value is Bool
                case .object: value is [String: Any]
                case .list: value is [Any]
                }
            guard fits else {
                out.append("\(key) must be a \(kind)")
                continue
            }
            if let allowed = values[key], let v = value as? String, !allowed.contains(v) {
                out.append("\(key) must be one of \(allowed.joined(separator: ", "))")
            }
        }
        // Subscribe topics: no wildcard in a topic that names one image.
        if let topic = payload["topic"] as? String, topic.contains("+") || topic.contains("#") {
            out.append("topic \(topic) has a wildcard")
        }
        if let device = payload["device"] as? [String: Any] {
            if device["identifiers"] == nil && device["connections"] == nil { out.append("device needs identifiers or connections") }
            for key in device.keys.sorted() where !deviceKeys.contains(key) { out.append("device.\(key) is not a key of a device") }
            if let url = device["configuration_url"] as? String,
                !(url.hasPrefix("http://") || url.hasPrefix("https://") || url.hasPrefix("homeassistant://"))
            {
                out.append("device.configuration_url \(url) is not an http(s) or homeassistant:// URL")
            }
        }
        if let origin = payload["origin"] as? [String: Any] {
            if origin["name"] == nil { out.append("origin.name is required") }
            for key in origin.keys.sorted() where !originKeys.contains(key) { out.append("origin.\(key) is not a key of an origin") }
        }
        return out
    }
}
