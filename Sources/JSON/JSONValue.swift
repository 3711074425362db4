import FoundationEssentials

/// A JSON value: the one JSON encoder of the program (every line, report, state file and MQTT
/// payload is rendered by it; JSONEncoder measured slower on the per-event path), and what
/// JSON read back is decoded into.
public indirect enum JSONValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral
{
    case string(String)
    case int(Int64)
    case double(Double)
    /// A number written with exactly `places` decimals (times in seconds with microseconds).
    case fixed(Double, places: Int)
    case bool(Bool)
    case null
    case array([JSONValue])
    /// Fields in the order given.
    case object([(String, JSONValue)])

    public init(stringLiteral s: String) { self = .string(s) }
    public init(integerLiteral i: Int64) { self = .int(i) }
    public init(booleanLiteral b: Bool) { self = .bool(b) }

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.encoded == b.encoded }
    public func hash(into h: inout Hasher) { h.combine(encoded) }

    /// Compact JSON text.
    public var encoded: String {
        var s = ""
        encode(into: &s)
        return s
    }

    public func encode(into s: inout String) {
        switch self {
        case .string(let v): Self.quote(v, into: &s)
        case .int(let v): s += String(v)
        case .double(let v): s += v.isFinite ? (v == v.rounded() && Swift.abs(v) < 1e15 ? String(Int64(v)) : String(v)) : "null"
        case .fixed(let v, let places): Self.fixed(v, places: places, into: &s)
        case .bool(let v): s += v ? "true" : "false"
        case .null: s += "null"
        case .array(let vs):
            s += "["
            for (i, v) in vs.enumerated() {
                if i > 0 { s += "," }
                v.encode(into: &s)
            }
            s += "]"
        case .object(let fields):
            s += "{"
            for (i, (k, v)) in fields.enumerated() {
                if i > 0 { s += "," }
                Self.quote(k, into: &s)
                s += ":"
                v.encode(into: &s)
            }
            s += "}"
        }
    }

    static func fixed(_ v: Double, places: Int, into s: inout String) {
        guard v.isFinite, Swift.abs(v) < 9e15 / pow10(places) else {
            s += v.isFinite ? String(v) : "null"
            return
        }
        let scale = Int64(pow10(places))
        let scaled = Int64((v * Double(scale)).rounded())
        if scaled < 0 { s += "-" }
        let magnitude = scaled.magnitude
        s += String(magnitude / UInt64(scale))
        guard places > 0 else { return }
        let frac = String(magnitude % UInt64(scale))
        s += "." + String(repeating: "0", count: places - frac.count) + frac
    }

    private static func pow10(_ n: Int) -> Double { (0..<n).reduce(1.0) { r, _ in r * 10 } }

    public static func quote(_ v: String, into s: inout String) {
        s += "\""
        // Almost every string (names, nodes, codes) needs no escape: append it whole.
        if !v.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            s += v
            s += "\""
            return
        }
        for u in v.unicodeScalars {
            switch u {
            case "\"": s += "\\\""
            case "\\": s += "\\\\"
            case "\n": s += "\\n"
            case "\r": s += "\\r"
            case "\t": s += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                s += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: s.unicodeScalars.append(u)
            }
        }
        s += "\""
    }
}

extension JSONValue: Decodable {
    /// A JSON text read back (the monitor reads the daemon's lines with it): whole numbers
    /// are `.int`, `true` is `.bool` (not the number 1), and objects come with their keys sorted.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self).sorted { $0.key < $1.key })
        }
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }

    /// A number, whole or not (`nil` for anything else, booleans included).
    public var number: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d), .fixed(let d, _): d
        default: nil
        }
    }
}

extension JSONValue {
    /// JSON text indented by two spaces per level, for people (`evcapture devices --json`).
    public var pretty: String {
        var s = ""
        pretty(into: &s, indent: "")
        return s
    }

    private func pretty(into s: inout String, indent: String) {
        let inner = indent + "  "
        switch self {
        case .array(let vs) where !vs.isEmpty:
            s += "[\n"
            for (i, v) in vs.enumerated() {
                s += inner
                v.pretty(into: &s, indent: inner)
                s += i < vs.count - 1 ? ",\n" : "\n"
            }
            s += indent + "]"
        case .object(let fields) where !fields.isEmpty:
            s += "{\n"
            for (i, (k, v)) in fields.enumerated() {
                s += inner
                Self.quote(k, into: &s)
                s += " : "
                v.pretty(into: &s, indent: inner)
                s += i < fields.count - 1 ? ",\n" : "\n"
            }
            s += indent + "}"
        default:
            encode(into: &s)
        }
    }

    /// Parses JSON text. Throws when it is not JSON.
    public static func parse(_ bytes: some Collection<UInt8>) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// A short rendering for error messages: strings quoted and cut at 40 characters, arrays
    /// and objects named.
    public var brief: String {
        switch self {
        case .string(let s): "\"\(s.count > 40 ? s.prefix(40) + "…" : Substring(s))\""
        case .array, .object: "an array or object"
        default: encoded
        }
    }

    /// An object's value for `key` (the last one, as JSON parsers do); nil for anything else.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let fields) = self else { return nil }
        return fields.last { $0.0 == key }?.1
    }
}

extension JSONValue {
    /// True for an object.
    public var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}
