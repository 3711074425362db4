import JSON
import Vocabulary

/// A command on a trigger topic (docs/mqtt.md#trigger-messages):
///
/// ```json
/// {"command":"photo","trigger":"st1-1764000000123-7","time":1764000000.123456,"from":"st1"}
/// ```
///
/// - `command` (required): `photo`, `video-start` or `video-stop`.
/// - `trigger`: the id every file of this moment carries (`{trigger}`, the `trigger` field
///   of `action` lines); 1–128 letters, digits, `-`, `_`, `.`, not starting with `.`. When
///   missing, the station makes one (then stations do not share it: a rig-wide trigger
///   should carry one).
/// - `time`: when the button went down, wall-clock seconds since 1970 (fractions allowed).
/// - `from`: the station that sent it (a station ignores its own fan-out coming back).
///
/// Anything else — another field, a wrong type, a payload that is not a JSON object or is
/// over 4 KiB — is refused with a message naming the problem.
public struct TriggerMessage: Sendable, Hashable {
    public var command: CaptureCommand
    public var trigger: String?
    public var time: Double?
    public var from: String?

    public init(command: CaptureCommand, trigger: String? = nil, time: Double? = nil, from: String? = nil) {
        self.command = command
        self.trigger = trigger
        self.time = time
        self.from = from
    }

    static let maximumSize = 4096
    static let fields = ["command", "trigger", "time", "from"]
    /// 2001-09-09 … 5138: wall-clock seconds; catches monotonic seconds and milliseconds.
    static let plausibleTimes = 1e9...1e11

    /// Parses and validates a payload.
    public static func parse(_ payload: [UInt8]) throws(TriggerMessageError) -> TriggerMessage {
        guard payload.count <= maximumSize else {
            throw TriggerMessageError("is \(payload.count) bytes, more than \(maximumSize)")
        }
        guard String(validating: payload, as: UTF8.self) != nil else { throw TriggerMessageError("is not UTF-8 text") }
        let parsed = try? JSONValue.parse(payload)
        guard case .object(let members) = parsed else {
            throw TriggerMessageError("is not a JSON object (like {\"command\":\"photo\"})")
        }
        let object = Dictionary(members, uniquingKeysWith: { _, last in last })
        for key in object.keys.sorted() where !fields.contains(key) {
            throw TriggerMessageError("has an unknown field \"\(key)\" (known: \(fields.joined(separator: ", ")))")
        }
        guard let commandValue = object["command"] else {
            throw TriggerMessageError("has no \"command\" (\(commandList))")
        }
        guard case .string(let commandName) = commandValue, let command = CaptureCommand(rawValue: commandName) else {
            throw TriggerMessageError("\"command\" must be one of \(commandList), not \(commandValue.brief)")
        }
        var message = TriggerMessage(command: command)
        if let v = object["trigger"] {
            guard case .string(let id) = v else { throw TriggerMessageError("\"trigger\" must be a string, not \(v.brief)") }
            if let problem = Self.problem(withID: id) { throw TriggerMessageError("\"trigger\" \(problem)") }
            message.trigger = id
        }
        if let v = object["time"] {
            guard let t = v.number, plausibleTimes.contains(t) else {
                throw TriggerMessageError("\"time\" must be wall-clock seconds since 1970 (like 1764000000.123), not \(v.brief)")
            }
            message.time = t
        }
        if let v = object["from"] {
            guard case .string(let from) = v else { throw TriggerMessageError("\"from\" must be a string, not \(v.brief)") }
            if let problem = RigSettings.problem(withName: from) { throw TriggerMessageError("\"from\" \(problem)") }
            message.from = from
        }
        return message
    }

    static var commandList: String { CaptureCommand.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ") }

    /// Why `id` is not a valid trigger id, or nil. Ids go into file names: no `/`, no
    /// leading `.`.
    public static func problem(withID id: String) -> String? {
        if id.isEmpty { return "is empty" }
        if id.utf8.count > 128 { return "is longer than 128 characters" }
        if let bad = id.unicodeScalars.first(where: { !RigSettings.isNameCharacter($0) }) {
            return "has '\(bad)' (use letters, digits, '-', '_' and '.')"
        }
        if id.hasPrefix(".") { return "starts with '.'" }
        return nil
    }

    /// The message as compact JSON (fields in schema order).
    public var json: String {
        var fields: [(String, JSONValue)] = [("command", .string(command.rawValue))]
        if let trigger { fields.append(("trigger", .string(trigger))) }
        if let time { fields.append(("time", .fixed(time, places: 6))) }
        if let from { fields.append(("from", .string(from))) }
        return JSONValue.object(fields).encoded
    }
}

/// A trigger message that was refused: the problem, for an `error` line.
public struct TriggerMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    public var problem: String
    public init(_ problem: String) { self.problem = problem }
    public var description: String { "trigger message \(problem)" }
}
