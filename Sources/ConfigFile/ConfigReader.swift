#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LinuxIO
import TOMLKit
import Camera
import Synchronization

/// Every table path the reader checked and the keys it accepts there, as the reader's own
/// `checkKeys` calls say: what docs/configuration.md must document (a test keeps it so).
final class KeyCensus: Sendable {
    let accepted = Mutex<[[String]: [String]]>([:])
}

/// Typed access to TOML tables with errors that point at the key's line.
struct ConfigReader {
    var file: String
    var lines: TOMLKeyLines
    var environment: [String: String] = [:]
    /// Where `checkKeys` records what it accepts (tests).
    var census: KeyCensus?

    func error(_ path: [String], _ problem: String) -> ConfigError {
        ConfigError(file: file, line: lines.line(of: path), problem: problem)
    }

    func warning(_ path: [String], _ problem: String) -> ConfigWarning {
        ConfigWarning(file: file, line: lines.line(of: path), problem: problem)
    }

    /// A key path as one writes it: `devices."AB Shutter3".roles`, `hooks[0].argv` (an
    /// element of an array of tables is the component `[0]`).
    func dotted(_ path: [String]) -> String {
        var out = ""
        for part in path {
            if part.hasPrefix("[") && part.hasSuffix("]") {
                out += part
                continue
            }
            if !out.isEmpty { out += "." }
            out += part.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } ? part : "\"\(part)\""
        }
        return out
    }

    /// A value as the file wrote it, for errors: `"half a second"`, `500`, `[1, 2]`, `a table`.
    func shown(_ v: any TOMLValueConvertible) -> String {
        if let s = v.string { return "\"\(escapingControlCharacters(s))\"" }
        if let b = v.bool { return b ? "true" : "false" }
        if let i = v.int { return "\(i)" }
        if let d = v.double { return "\(d)" }
        if let a = v.array {
            let items = a.map { shown($0) }.joined(separator: ", ")
            return items.count <= 60 ? "[\(items)]" : "a list of \(a.count)"
        }
        if v.table != nil { return "a table" }
        return "a \(v.type)"
    }

    func checkKeys(_ t: TOMLTable, path: [String], allowed: [String]) throws(ConfigError) {
        census?.accepted.withLock { $0[path] = allowed }
        for key in t.keys.sorted() where !allowed.contains(key) {
            let where_ = path.isEmpty ? "" : " in [\(dotted(path))]"
            throw error(path + [key], "unknown key \"\(key)\"\(where_) (known: \(allowed.joined(separator: ", ")))")
        }
    }

    func table(_ t: TOMLTable, _ key: String, path: [String]) throws(ConfigError) -> TOMLTable? {
        guard let v = t[key] else { return nil }
        guard let table = v.table else { throw error(path + [key], "\(dotted(path + [key])) must be a table, not \(shown(v))") }
        return table
    }

    func bool(_ t: TOMLTable, _ key: String, path: [String]) throws(ConfigError) -> Bool? {
        guard let v = t[key] else { return nil }
        guard let b = v.bool else { throw error(path + [key], "\(dotted(path + [key])) must be true or false, not \(shown(v))") }
        return b
    }

    func string(_ t: TOMLTable, _ key: String, path: [String]) throws(ConfigError) -> String? {
        guard let v = t[key] else { return nil }
        guard let s = v.string else { throw error(path + [key], "\(dotted(path + [key])) must be a string, not \(shown(v))") }
        return s
    }

    /// A number of seconds (integer or float) within `range` (by default more than 0 — or 0
    /// too when `allowingZero` — and at most an hour). A number that is too large but would
    /// fit as milliseconds is taken for a unit mistake and the error says so.
    func seconds(
        _ t: TOMLTable, _ key: String, path: [String], allowingZero: Bool = false, in range: ClosedRange<Double>? = nil
    ) throws(ConfigError) -> Duration? {
        guard let v = t[key] else { return nil }
        let s: Double
        if let i = v.int {
            s = Double(i)
        } else if let d = v.double {
            s = d
        } else {
            throw error(path + [key], "\(dotted(path + [key])) must be a number of seconds, not \(shown(v))")
        }
        let name = dotted(path + [key])
        if let range {
            guard range.contains(s) else {
                var problem =
                    "\(name) must be between \(Self.number(range.lowerBound)) and \(Self.number(range.upperBound)) seconds, not \(shown(v))"
                if s > range.upperBound, range.contains(s / 1000) {
                    problem += " (seconds, not milliseconds: for \(shown(v)) ms write \(Self.number(s / 1000)))"
                }
                throw error(path + [key], problem)
            }
        } else {
            guard s > 0 || (allowingZero && s == 0), s <= 3600 else {
                throw error(
                    path + [key],
                    "\(name) must be \(allowingZero ? "0" : "more than 0") and at most 3600 seconds, not \(shown(v))")
            }
        }
        return .microseconds(Int64((s * 1_000_000).rounded()))
    }

    /// `0.5`, `10` (no `.0` on whole numbers).
    static func number(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? "\(Int64(d))" : "\(d)"
    }
}

/// The lines of a TOML text as its parser numbers them: split at each "\n" scalar, so a CRLF
/// line keeps its "\r". Not `text.split(separator: "\n")`: in a String "\r\n" is one
/// Character, never equal to "\n", so a CRLF file would be a single line (every error at
/// line 1, and the table header check blind after line 1).
func tomlLines(_ text: String) -> [Substring] {
    text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map(Substring.init)
}

/// Where each key of a TOML text is defined, for errors about values (TOMLKit gives source
/// positions only for syntax errors). Understands `[table]`, `[[array]]` headers, dotted and
/// quoted keys, and inline tables on one line; a path it cannot find maps to the line of its
/// longest known prefix.
struct TOMLKeyLines {
    private var lines: [[String]: Int] = [:]

    init(_ text: String) {
        var table: [String] = []
        var arrayCounts: [[String]: Int] = [:]  // `[[x]]` headers seen so far, per path
        var n = 0
        for raw in tomlLines(text) {
            n += 1
            let line = raw.drop { $0 == " " || $0 == "\t" }
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasPrefix("[") {
                let inner = line.drop { $0 == "[" }
                guard let close = Self.endOfKey(inner, stop: "]") else { continue }
                table = Self.splitKey(inner[..<close])
                record(table, n)
                if line.hasPrefix("[[") {
                    // Element i of an array of tables is `x.[i]`, as `ConfigReader.dotted` writes it.
                    let i = arrayCounts[table, default: 0]
                    arrayCounts[table] = i + 1
                    table.append("[\(i)]")
                    record(table, n)
                }
                continue
            }
            guard let eq = Self.endOfKey(line, stop: "=") else { continue }
            let key = table + Self.splitKey(line[..<eq])
            record(key, n)
            // Inline table: `roles = { A = "x", B = "y" }` — record its keys on this line.
            let rest = line[line.index(after: eq)...].drop { $0 == " " }
            if rest.hasPrefix("{") {
                for item in rest.dropFirst().split(separator: ",") {
                    if let e = Self.endOfKey(item, stop: "=") { record(key + Self.splitKey(item[..<e]), n) }
                }
            }
        }
    }

    private mutating func record(_ path: [String], _ line: Int) {
        if lines[path] == nil { lines[path] = line }
    }

    /// The line of a key path, or of its longest known prefix; 1 if none is known.
    func line(of path: [String]) -> Int {
        var p = path
        while !p.isEmpty {
            if let l = lines[p] { return l }
            p.removeLast()
        }
        return 1
    }

    /// The index of `stop` outside quotes, if any.
    static func endOfKey(_ s: Substring, stop: Character) -> Substring.Index? {
        var quote: Character? = nil
        var i = s.startIndex
        while i < s.endIndex {
            let c = s[i]
            if let q = quote {
                if c == q { quote = nil }
            } else if c == "\"" || c == "'" {
                quote = c
            } else if c == stop {
                return i
            }
            i = s.index(after: i)
        }
        return nil
    }

    /// `a."b.c" . d` → ["a", "b.c", "d"]
    static func splitKey(_ s: Substring) -> [String] {
        var parts: [String] = []
        var current = ""
        var quote: Character? = nil
        for c in s {
            if let q = quote {
                if c == q { quote = nil } else { current.append(c) }
            } else if c == "\"" || c == "'" {
                quote = c
            } else if c == "." {
                parts.append(current)
                current = ""
            } else if c != " " && c != "\t" {
                current.append(c)
            }
        }
        parts.append(current)
        return parts
    }
}
