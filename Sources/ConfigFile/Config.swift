import Capture
import Vocabulary
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LinuxIO
import TOMLKit
import Camera

/// A config that cannot be used: `file:line: problem` (``FileLineError``).
public typealias ConfigError = FileLineError

/// Something in a config file that is allowed but probably not what was meant:
/// `file:line: warning: problem`. `check-config` prints them; the daemon logs them.
public struct ConfigWarning: Hashable, Sendable, CustomStringConvertible {
    /// Where and what, as an error would say it.
    public var place: FileLineError
    public init(file: String, line: Int, problem: String) {
        place = FileLineError(file: file, line: line, problem: problem)
    }
    public var description: String { place.described(prefix: "warning: ") }
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
                    let fine =
                        c.map { c in
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
        try parse(text, file: file, environment: environment, census: nil)
    }

    /// ``parse(_:file:environment:)`` recording in `census` every table checked and its keys.
    static func parse(
        _ text: String, file: String, environment: [String: String] = ProcessInfo.processInfo.environment, census: KeyCensus?
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
        let reader = ConfigReader(file: file, lines: TOMLKeyLines(text), environment: environment, census: census)
        var config = Config()
        try reader.checkKeys(
            table, path: [],
            allowed: [
                "capture", "devices", "camera", "output", "handlers", "hooks", "sound", "socket", "controls", "session", "mqtt", "http",
                "rtsp", "outputs",
            ])

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
                            throw reader.error(
                                p + ["has"],
                                "devices.\(reader.dotted([name])).has: unknown event code \"\(n)\" (use kernel names like KEY_VOLUMEDOWN, REL_X)"
                            )
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
        if let http = try reader.table(table, "http", path: []) { config.daemon.http = try reader.http(http) }
        if let rtsp = try reader.table(table, "rtsp", path: []) { config.daemon.rtsp = try reader.rtsp(rtsp, http: config.daemon.http) }
        return config
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
