import Vocabulary

/// Who this station is in a rig, and where its messages go: the `[mqtt]` table's station,
/// prefix, groups, fan-out and Home Assistant discovery.
public struct RigSettings: Sendable, Hashable {
    /// Where a station's own primary clicks and long presses go besides itself.
    public enum FanOut: Sendable, Hashable {
        /// Only this station acts (the default).
        case none
        /// Every station (`<prefix>/all/trigger`).
        case all
        /// The stations of a group (`<prefix>/group/<name>/trigger`).
        case group(String)
    }

    /// The station's name: a topic level and the MQTT client id.
    public var station: String
    /// The first topic level of every message.
    public var prefix: String
    /// Groups this station listens to (`<prefix>/group/<name>/trigger`).
    public var groups: [String]
    public var fanOut: FanOut
    /// Where Home Assistant's MQTT discovery configs go (`<discoveryPrefix>/<component>/…`);
    /// nil: no discovery.
    public var discoveryPrefix: String?

    public init(
        station: String, prefix: String = "evcapture", groups: [String] = [], fanOut: FanOut = .none,
        discoveryPrefix: String? = HomeAssistantDiscovery.defaultPrefix
    ) {
        self.station = station
        self.prefix = prefix
        self.groups = groups
        self.fanOut = fanOut
        self.discoveryPrefix = discoveryPrefix
    }

    /// Station names that would collide with the rig's own topics.
    public static let reservedNames: Set<String> = ["all", "group"]

    /// Checks a station, group or prefix level: non-empty, at most 64 characters of
    /// letters, digits, `-`, `_` and `.` (no MQTT wildcards, no `/`, safe in file names).
    /// Returns the problem, or nil when it is fine.
    public static func problem(withName name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name.utf8.count > 64 { return "is longer than 64 characters" }
        if let bad = name.unicodeScalars.first(where: { !Self.isNameCharacter($0) }) {
            return "has '\(bad)' (use letters, digits, '-', '_' and '.')"
        }
        return nil
    }

    /// Checks a prefix: one or more name levels separated by `/`.
    public static func problem(withPrefix prefix: String) -> String? {
        for level in prefix.split(separator: "/", omittingEmptySubsequences: false) {
            if let p = problem(withName: String(level)) { return "has a level that \(p)" }
        }
        return nil
    }

    static func isNameCharacter(_ u: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(u) || ("A"..."Z").contains(u) || ("0"..."9").contains(u) || u == "-" || u == "_" || u == "."
    }
}

/// The rig's topics and their QoS (docs/mqtt.md#topics):
///
/// | topic | payload | QoS | retained |
/// |---|---|---|---|
/// | `<prefix>/<station>/status` | `online` / `offline` (last will) | 1 | yes |
/// | `<prefix>/<station>/event/<event>` | the JSON line (`capture`, `action`, `error`, `device`, `session`, `controls`, `control`) | 1; `control` 0 | no |
/// | `<prefix>/<station>/photo` | the latest photo, JPEG bytes (with discovery) | 1 | yes |
/// | `<prefix>/<station>/links` | the live view's addresses, JSON (with discovery and `[http]`) | 1 | yes |
/// | `<prefix>/<station>/trigger` | a trigger message, this station only | 1 | no |
/// | `<prefix>/all/trigger` | a trigger message for every station | 1 | no |
/// | `<prefix>/group/<group>/trigger` | a trigger message for a group's stations | 1 | no |
public struct RigTopics: Sendable, Hashable {
    public let settings: RigSettings

    public init(_ settings: RigSettings) { self.settings = settings }

    var base: String { "\(settings.prefix)/\(settings.station)" }

    /// Retained `online`, and `offline` as the last will.
    public var status: String { base + "/status" }

    /// Where the JSON line of an event kind goes.
    public func event(_ kind: String) -> String { base + "/event/" + kind }

    /// Control values come at a knob's pace and each replaces the last: at most once.
    public static func qos(forEvent kind: String) -> QoS { kind == "control" ? .atMostOnce : .atLeastOnce }

    /// The latest photo, JPEG bytes, retained (Home Assistant's camera image).
    public var photo: String { base + "/photo" }
    /// The live view's addresses as JSON, retained (the camera entity's attributes).
    public var links: String { base + "/links" }

    public var ownTrigger: String { base + "/trigger" }
    var allTrigger: String { settings.prefix + "/all/trigger" }
    func groupTrigger(_ group: String) -> String { settings.prefix + "/group/\(group)/trigger" }

    /// Every trigger topic this station takes commands from.
    public var triggerSubscriptions: [String] {
        [ownTrigger, allTrigger] + settings.groups.map(groupTrigger)
    }

    /// Where this station's own presses are sent (nil: fan-out none).
    public var fanOutTopic: String? {
        switch settings.fanOut {
        case .none: nil
        case .all: allTrigger
        case .group(let g): groupTrigger(g)
        }
    }

    public func online() -> MQTTMessage { MQTTMessage(topic: status, text: "online", qos: .atLeastOnce, retain: true) }
    public func offline() -> MQTTMessage { MQTTMessage(topic: status, text: "offline", qos: .atLeastOnce, retain: true) }

    /// The event topic and QoS of a daemon JSON line, from its `event` field (always the
    /// first field, ``Output/JSONLines``); nil for a line without one.
    public func message(forLine line: String) -> MQTTMessage? {
        let head = #"{"event":""#
        guard line.hasPrefix(head) else { return nil }
        let rest = line.utf8.dropFirst(head.utf8.count)
        guard let end = rest.firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        let kind = String(decoding: rest[..<end], as: UTF8.self)
        guard RigSettings.problem(withName: kind) == nil else { return nil }
        return MQTTMessage(topic: event(kind), text: line, qos: Self.qos(forEvent: kind))
    }
}
