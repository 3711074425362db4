import Capture
import Evdev
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LinuxIO
import TOMLKit
import Actions
import Camera

/// A config that cannot be used: `file:line: problem` (``FileLineError``).
public typealias ConfigError = FileLineError

/// Something in a config file that is allowed but probably not what was meant:
/// `file:line: warning: problem`. `check-config` prints them; the daemon logs them.
public struct ConfigWarning: Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var problem: String
    public init(file: String, line: Int, problem: String) {
        self.file = file
        self.line = line
        self.problem = problem
    }
    public var description: String { line > 0 ? "\(file):\(line): warning: \(problem)" : "\(file): warning: \(problem)" }
}

/// The config file (TOML). Everything is optional; an empty file is the defaults.
///
/// ```toml
/// [capture]
/// hold-threshold = 0.5         # seconds until a press is a long press
/// double-click = false         # report quick second clicks as double-click
/// double-click-window = 0.3    # seconds from a click's release to the next press
/// secondary-handler = false    # true: secondary keys (KEY_VOLUMEUP) are their own button;
///                              # false: they act as the primary button
///
/// [devices."AB Shutter3"]      # by device name (evdev name, `N:` in evemu files)
/// kind = "shutter"             # buttons, shutter, headset, knob, dial, encoder, keyboard, pointer, ignore
/// grab = true                  # grab while the session runs (dedicated to the rig)
/// roles = { KEY_ENTER = "primary", KEY_VOLUMEUP = "slider+1" }
///
/// [devices.jog]                # by vendor and product (hex), e.g. a jog wheel
/// vendor = "0b33"
/// product = "0020"
/// roles = { REL_DIAL = "slider:counter", REL_WHEEL = "ignore" }
///                              # slider:counter: REL_DIAL carries an 8-bit position counter
/// ```
///
/// Unknown keys, wrong types and bad values are errors naming the file and line.
public struct Config: Sendable {
    /// Gesture thresholds and routing for the capture core.
    public var capture = CaptureCoreSettings()
    /// Role overrides per `[devices.LABEL]` table, in label order (the first match wins), fed to
    /// `RoleClassifier.profile(config:)`.
    public var deviceRules: [(label: String, match: DeviceMatch, overrides: RoleOverrides)] = []
    /// The daemon's settings (camera, output, handlers, hooks, sound, socket, controls).
    public var daemon = DaemonSettings()
    /// The line of each `[devices.LABEL]` table, for reports about the rule.
    public var deviceRuleLines: [String: Int] = [:]
    /// Allowed but probably not meant (a rule without match keys, ...), in file order.
    public var warnings: [ConfigWarning] = []

    public init() {}

    /// Role overrides by label (the device name unless the table has match keys).
    public var devices: [String: RoleOverrides] {
        get { Dictionary(deviceRules.map { ($0.label, $0.overrides) }, uniquingKeysWith: { a, _ in a }) }
        set {
            deviceRules = newValue.keys.sorted().map { (label: $0, match: DeviceMatch(name: $0), overrides: newValue[$0]!) }
        }
    }

    /// The overrides for a device named `name` (replays: no node to match).
    public func overrides(forDevice name: String) -> RoleOverrides? {
        deviceRules.first { $0.match.name == name && $0.match.node == nil }?.overrides
    }

    /// The overrides of the first `[devices.*]` table that matches a live device.
    public func overrides(for description: DeviceDescription, node: String) -> RoleOverrides? {
        deviceRules.first { $0.match.matches(description, node: node) }?.overrides
    }

    /// Reads a config file.
    public static func load(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> Config {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigError(file: path, line: 0, problem: "cannot read: \(Self.reason(error))")
        }
        return try parse(text, file: path, environment: environment)
    }

    static func reason(_ error: any Error) -> String {
        if let e = error as? CocoaError, let p = e.underlying as? POSIXError {
            return String(cString: strerror(p.code.rawValue))
        }
        if let e = error as? CocoaError, e.code == .fileReadNoSuchFile { return "no such file" }
        if let e = error as? CocoaError, e.code == .fileReadInapplicableStringEncoding || e.code == .fileReadCorruptFile {
            return "not UTF-8 text"
        }
        return "\(error)"
    }

    /// A table header whose first key starts with a character that is neither a bare-key
    /// character nor a quote (`[é]`, `[ ~]`, `[[+]]`, a `[` alone on its line) fails an
    /// internal check of toml++'s parser. That check is a parse error since the vendored
    /// TOMLKit's patch (Vendor/README.md; before it, an abort found by fuzzing), but its words
    /// name the parser's internals: such headers are refused here first, with a plain message.
    /// Safety does not depend on this scan. Only lines where a header can start are checked: not inside an array or
    /// inline table left open by an earlier line, nor inside a multi-line string. Lines are
    /// the parser's (`tomlLines`), so a CRLF file is checked line by line too.
    static func checkTableHeaders(_ text: String, file: String) throws(ConfigError) {
        var depth = 0  // `[` and `{` of values still open at the end of the previous line
        var multiline: Unicode.Scalar?  // the quote of an open """ or ''' string
        var number = 0
        for line in tomlLines(text) {
            number += 1
            let s = Array(line.unicodeScalars)
            var i = 0
            func skipBlanks() { while i < s.count && (s[i] == " " || s[i] == "\t") { i += 1 } }
            if multiline == nil && depth == 0 {
                skipBlanks()
                if i < s.count && s[i] == "[" {
                    i += 1
                    if i < s.count && s[i] == "[" { i += 1 }
                    skipBlanks()
                    let c = i < s.count ? s[i] : nil
                    let fine = c.map { c in
                        c == "]" || c == "\"" || c == "'" || c == "_" || c == "-"
                            || ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c)
                    } ?? false
                    if !fine {
                        let end = c == nil || (c == "\r" && i + 1 == s.count)  // a CRLF line ends at its \r
                        throw ConfigError(
                            file: file, line: number,
                            problem: "a table header must start with a key (letters, digits, - and _, or a quoted key), not "
                                + (end ? "the end of the line" : "'\(escapingControlCharacters(String(c!)))'"))
                    }
                }
                i = 0
            }
            // Follow strings, comments and brackets to the end of the line.
            while i < s.count {
                let c = s[i]
                if let q = multiline {
                    if c == q && i + 2 < s.count && s[i + 1] == q && s[i + 2] == q {
                        multiline = nil
                        i += 3
                    } else {
                        i += (q == "\"" && c == "\\") ? 2 : 1
                    }
                    continue
                }
                if c == "#" { break }
                if c == "\"" || c == "'" {
                    if i + 2 < s.count && s[i + 1] == c && s[i + 2] == c {
                        multiline = c
                        i += 3
                        continue
                    }
                    i += 1
                    while i < s.count && s[i] != c { i += (c == "\"" && s[i] == "\\") ? 2 : 1 }
                    i += 1
                    continue
                }
                if c == "[" || c == "{" { depth += 1 } else if c == "]" || c == "}" { depth = max(0, depth - 1) }
                i += 1
            }
        }
    }

    /// Parses config text; `file` names it in errors. No text aborts it: toml++'s internal
    /// checks report parse errors (Vendor/README.md), and fuzzing (Tests/Fuzz, in CI) looks for more.
    /// `environment` gives `HOME` for `~` in `[output] directory`.
    public static func parse(
        _ text: String, file: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> Config {
        try checkTableHeaders(text, file: file)
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let e as TOMLParseError {
            throw ConfigError(file: file, line: max(1, e.source.begin.line), problem: e.description)
        } catch {
            throw ConfigError(file: file, line: 1, problem: "\(error)")
        }
        let reader = ConfigReader(file: file, lines: TOMLKeyLines(text), environment: environment)
        var config = Config()
        try reader.checkKeys(
            table, path: [],
            allowed: ["capture", "devices", "camera", "output", "handlers", "hooks", "sound", "socket", "controls", "session", "mqtt"])

        if let capture = try reader.table(table, "capture", path: []) {
            let p = ["capture"]
            try reader.checkKeys(
                capture, path: p, allowed: ["hold-threshold", "double-click", "double-click-window", "secondary-handler"])
            if let s = try reader.seconds(capture, "hold-threshold", path: p, in: 0.05...10) { config.capture.holdThreshold = s }
            if let b = try reader.bool(capture, "double-click", path: p) { config.capture.doubleClickEnabled = b }
            if let s = try reader.seconds(capture, "double-click-window", path: p, in: 0.05...5) { config.capture.doubleClickWindow = s }
            if let b = try reader.bool(capture, "secondary-handler", path: p) { config.capture.hasSecondaryHandler = b }
        }

        if let devices = try reader.table(table, "devices", path: []) {
            for name in devices.keys.sorted() {
                let p = ["devices", name]
                guard let device = try reader.table(devices, name, path: ["devices"]) else { continue }
                try reader.checkKeys(
                    device, path: p, allowed: ["kind", "grab", "roles", "name", "node", "bus", "vendor", "product", "uniq", "has"])
                var match = DeviceMatch(
                    name: try reader.string(device, "name", path: p), node: try reader.string(device, "node", path: p),
                    bus: try reader.hex16(device, "bus", path: p), vendor: try reader.hex16(device, "vendor", path: p),
                    product: try reader.hex16(device, "product", path: p), uniq: try reader.string(device, "uniq", path: p))
                if let names = try reader.strings(device, "has", path: p) {
                    for n in names {
                        guard let code = EventCode(name: n) else {
                            throw reader.error(p + ["has"], "devices.\(reader.dotted([name])).has: unknown event code \"\(n)\" (use kernel names like KEY_VOLUMEDOWN, REL_X)")
                        }
                        match.has.insert(code)
                    }
                }
                config.deviceRuleLines[name] = reader.lines.line(of: p)
                if match == DeviceMatch() {
                    match.name = name
                    config.warnings.append(
                        reader.warning(
                            p,
                            "[\(reader.dotted(p))] has no match keys (name, node, bus, vendor, product, uniq, has): it applies only to a device named \"\(name)\"; add name = \"...\" (as evcapture devices shows it) or other match keys to say which device"
                        ))
                }
                var o = RoleOverrides()
                if let kind = try reader.string(device, "kind", path: p) {
                    guard let k = DeviceKind(rawValue: kind), k != .other else {
                        let kinds = DeviceKind.allCases.filter { $0 != .other }.map(\.rawValue).joined(separator: ", ")
                        throw reader.error(p + ["kind"], "unknown device kind \"\(kind)\" (use one of \(kinds))")
                    }
                    o.kind = k
                }
                o.dedicated = try reader.bool(device, "grab", path: p)
                if let roles = try reader.table(device, "roles", path: p) {
                    for codeName in roles.keys.sorted() {
                        let rp = p + ["roles", codeName]
                        guard let code = EventCode(name: codeName) else {
                            throw reader.error(rp, "unknown event code \"\(codeName)\" (use kernel names like KEY_VOLUMEUP, REL_DIAL)")
                        }
                        guard let spelling = try reader.string(roles, codeName, path: p + ["roles"]) else { continue }
                        switch CodeRole.parse(spelling, for: code) {
                        case .success(let role): o.codes[code] = role
                        case .failure(let problem): throw reader.error(rp, problem.description)
                        }
                    }
                }
                config.deviceRules.append((label: name, match: match, overrides: o))
            }
        }
        config.daemon = try reader.daemonSettings(table, capture: &config.capture)
        if let mqtt = try reader.table(table, "mqtt", path: []) {
            (config.daemon.mqtt, config.daemon.rig) = try reader.mqtt(mqtt)
        }
        return config
    }
}

/// Typed access to TOML tables with errors that point at the key's line.
struct ConfigReader {
    var file: String
    var lines: TOMLKeyLines
    var environment: [String: String] = [:]

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
                var problem = "\(name) must be between \(Self.number(range.lowerBound)) and \(Self.number(range.upperBound)) seconds, not \(shown(v))"
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

extension ReplayPipeline {
    /// A replay under a config: its capture settings and every device rule (all match keys,
    /// as for a live device; the node is the recording's file name).
    public init(inputs: [ReplayInput], config: Config, controls: (any ControlsStage)? = nil) {
        self.init(
            inputs: inputs, settings: config.capture, overrides: { config.overrides(for: $0, node: $1) }, controls: controls)
    }
}
