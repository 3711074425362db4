// What the rig publishes and the MQTT client sends (docs/mqtt.md): messages as values, so the
// rig's pure logic needs no MQTT client.

/// MQTT quality of service: how hard the broker and client try to deliver a message.
public enum QoS: Int32, Sendable, Hashable, Comparable {
    /// At most once: nothing is stored or retried (a knob's control values: a lost one is
    /// replaced by the next).
    case atMostOnce = 0
    /// At least once: acknowledged and retried (capture events, actions, triggers).
    case atLeastOnce = 1
    public static func < (a: QoS, b: QoS) -> Bool { a.rawValue < b.rawValue }
}

/// One message to publish.
public struct MQTTMessage: Sendable, Hashable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: QoS
    public var retain: Bool
    public init(topic: String, payload: [UInt8], qos: QoS, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }
    public init(topic: String, text: String, qos: QoS, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }
}
