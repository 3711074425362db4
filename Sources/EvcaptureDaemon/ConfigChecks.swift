#if canImport(Glibc)
import Glibc
#endif
import Vocabulary
import FoundationEssentials
import ConfigFile
import Output

/// The output directory, made ready when the daemon starts: created if missing, and
/// refused with a reason a person can act on when it cannot be written.
public struct OutputDirectoryError: Error, CustomStringConvertible, Sendable, Equatable {
    public var path: String
    public var errno: Int32
    public var problem: String
    public var description: String {
        var s = "output directory \(path): \(problem)"
        if errno != 0 { s += " (\(String(cString: strerror(errno))))" }
        if errno != 0 && SystemError.Code(errno: errno) == .permissionDenied {
            s +=
                ". Under systemd/evcapture.service (ProtectSystem=strict) the service writes only to its state directory "
                + "unless a drop-in allows another one: sudo systemctl edit evcapture, then\n  [Service]\n  ReadWritePaths=\(path)\n"
                + "and make the directory writable by the service's user (sudo install -d -o evcapture -g evcapture -m 2750 \(path))"
        }
        return s
    }
}

enum OutputDirectory {
    /// `mkdir -p path`, then checks it is a directory this process may write to.
    public static func prepare(_ path: String) throws(OutputDirectoryError) {
        var st = stat()
        if stat(path, &st) != 0 {
            var current = ""
            for part in path.split(separator: "/") {
                current += "/" + part
                if mkdir(current, 0o755) != 0 && errno != EEXIST {
                    let e = errno
                    throw OutputDirectoryError(path: path, errno: e, problem: "cannot create \(current)")
                }
            }
            guard stat(path, &st) == 0 else {
                throw OutputDirectoryError(path: path, errno: errno, problem: "cannot create it")
            }
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw OutputDirectoryError(path: path, errno: ENOTDIR, problem: "exists and is not a directory")
        }
        // access(2) answers for this process's ids and for a read-only mount (EROFS), which is
        // what ProtectSystem=strict makes of everything outside ReadWritePaths.
        guard access(path, W_OK | X_OK) == 0 else {
            throw OutputDirectoryError(path: path, errno: errno, problem: "photos and videos cannot be written there")
        }
    }
}

/// What the installed evcapture.service lets the service write, read from the unit and its
/// drop-ins: for `check-config`, which runs as a person, not as the service.
public struct ServiceSandbox: Sendable, Equatable {
    /// The unit file that was read.
    public var unit: String
    /// `User=` of the unit.
    public var user: String?
    var protectSystemStrict = false
    /// `ProtectHome=yes` (hidden) or `read-only`; `tmpfs` and `no` leave ReadWritePaths= working.
    var protectHome: String?
    /// StateDirectory= (as /var/lib/…), RuntimeDirectory= (as /run/…) and ReadWritePaths=.
    public var writable: [String] = []
    /// `RestrictAddressFamilies=`: the families allowed (nil: any) and those denied (`~`).
    var allowedAddressFamilies: [String]?
    var deniedAddressFamilies: [String] = []

    /// Whether the service may open sockets of `family` (`AF_INET`, `AF_INET6`).
    public func allows(_ family: String) -> Bool {
        (allowedAddressFamilies?.contains(family) ?? true) && !deniedAddressFamilies.contains(family)
    }

    public static let unitDirectories = [
        "/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system",
        "/lib/systemd/system",
    ]

    /// The installed `evcapture.service` (the first unit directory that has one) and its
    /// drop-ins (`evcapture.service.d/*.conf` in every unit directory), or nil when none is installed.
    public static func installed(unitDirectories: [String] = unitDirectories, name: String = "evcapture.service") -> ServiceSandbox? {
        let units: [String] = unitDirectories.map { "\($0)/\(name)" }
        guard let unit = units.first(where: { (path: String) -> Bool in access(path, R_OK) == 0 }),
            let text = try? String(contentsOfFile: unit, encoding: .utf8)
        else { return nil }
        var dropIns: [String] = []
        for dir in unitDirectories {
            let d = "\(dir)/\(name).d"
            for f in ((try? FileManager.default.contentsOfDirectory(atPath: d)) ?? []).sorted() where f.hasSuffix(".conf") {
                if let t = try? String(contentsOfFile: "\(d)/\(f)", encoding: .utf8) { dropIns.append(t) }
            }
        }
        return parse(unit: unit, text: text, dropIns: dropIns)
    }

    /// Without blanks at either end. (Not Foundation's trimmingCharacters(in:): the daemon
    /// links FoundationEssentials only, Tests/release-check.)
    static func trimmed(_ s: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(s.drop(while: blank).reversed().drop(while: blank).reversed())
    }

    /// The settings that decide where the service may write; later files override earlier
    /// ones, an empty `ReadWritePaths=` clears the list (systemd.exec(5)).
    public static func parse(unit: String, text: String, dropIns: [String]) -> ServiceSandbox {
        var s = ServiceSandbox(unit: unit)
        var readWrite: [String] = []
        var state: [String] = []
        var runtime: [String] = []
        for file in [text] + dropIns {
            for raw in file.split(separator: "\n") {
                let line = trimmed(raw)
                guard !line.hasPrefix("#"), !line.hasPrefix(";"), let eq = line.firstIndex(of: "=") else { continue }
                let key = trimmed(line[..<eq])
                let value = trimmed(line[line.index(after: eq)...])
                let words = value.split(separator: " ").map(String.init)
                switch key {
                case "User": s.user = value.isEmpty ? nil : value
                case "ProtectSystem": s.protectSystemStrict = value == "strict"
                case "ProtectHome": s.protectHome = ["yes", "true", "read-only"].contains(value) ? value : nil
                case "ReadWritePaths":
                    if value.isEmpty { readWrite = [] } else { readWrite += words.map { String($0.drop { $0 == "-" || $0 == "+" }) } }
                case "StateDirectory":
                    if value.isEmpty { state = [] } else { state += words.map { "/var/lib/" + $0.split(separator: ":")[0] } }
                case "RestrictAddressFamilies":
                    if value.isEmpty {
                        (s.allowedAddressFamilies, s.deniedAddressFamilies) = (nil, [])
                    } else if value.hasPrefix("~") {
                        s.deniedAddressFamilies += value.dropFirst().split(separator: " ").map(String.init)
                    } else {
                        s.allowedAddressFamilies = (s.allowedAddressFamilies ?? []) + words
                    }
                case "RuntimeDirectory":
                    if value.isEmpty { runtime = [] } else { runtime += words.map { "/run/" + $0.split(separator: ":")[0] } }
                default: break
                }
            }
        }
        s.writable = state + runtime + readWrite
        return s
    }

    /// Why the service could not write photos to `directory`, or nil when it can as far as
    /// the unit and the directory's owner and mode tell.
    public func problem(writing directory: String) -> String? {
        func under(_ base: String) -> Bool { directory == base || directory.hasPrefix(base.hasSuffix("/") ? base : base + "/") }
        let dropIn = "sudo systemctl edit evcapture, then add\n  [Service]\n  ReadWritePaths=\(directory)"
        if let protectHome, ["/home", "/root", "/run/user"].contains(where: under) {
            return
                "the evcapture service (\(unit): ProtectHome=\(protectHome)) cannot see \(directory): choose a directory outside /home, such as /srv/evcapture, and allow it with a drop-in: \(dropIn)"
        }
        if protectSystemStrict && !writable.contains(where: under) {
            return "the evcapture service (\(unit): ProtectSystem=strict) cannot write to \(directory) without a drop-in: \(dropIn)"
        }
        if let user, let reason = Self.permissionProblem(user: user, directory: directory) { return reason }
        return nil
    }

    /// Whether `user` may write into `directory` (or the nearest existing parent, which the
    /// daemon would create it in), judged from owner, group and mode.
    static func permissionProblem(user: String, directory: String) -> String? {
        guard let pw = getpwnam(user) else { return nil }  // no such user: nothing to judge
        var existing = directory
        var st = stat()
        while stat(existing, &st) != 0 {
            guard let slash = existing.lastIndex(of: "/"), existing != "/" else { return nil }
            existing = slash == existing.startIndex ? "/" : String(existing[..<slash])
        }
        let uid = pw.pointee.pw_uid
        let gid = pw.pointee.pw_gid
        if uid == 0 { return nil }
        var groups = [gid_t](repeating: 0, count: 64)
        var count = Int32(groups.count)
        _ = getgrouplist(user, gid, &groups, &count)
        let inGroup = groups.prefix(Int(max(0, count))).contains(st.st_gid)
        let mode = st.st_mode
        let ok = st.st_uid == uid ? mode & 0o300 == 0o300 : inGroup ? mode & 0o030 == 0o030 : mode & 0o003 == 0o003
        if ok { return nil }
        let what = existing == directory ? directory : "\(existing) (where \(directory) would be created)"
        return
            "the service's user \(user) may not write to \(what) (mode \(String(st.st_mode & 0o7777, radix: 8)), owner uid \(st.st_uid), group gid \(st.st_gid)): sudo install -d -o \(user) -g \(user) -m 2750 \(directory)"
    }
}

/// Which present devices each `[devices.LABEL]` rule matches (first match wins, as in the daemon).
struct RuleMatch: Sendable, Equatable {
    public var label: String
    public var line: Int
    /// `name = "…", has = [...]`: the match keys, as written (or the label, for a rule without any).
    var matchKeys: String
    /// Devices this rule applies to: (node, name).
    public var devices: [Device]
    /// Devices it matches but an earlier rule takes.
    var shadowed: [Device]

    public struct Device: Sendable, Equatable {
        public var node: String
        public var name: String
    }

    public static func report(config: Config, devices: [(node: String, description: DeviceDescription)]) -> [RuleMatch] {
        var taken: Set<String> = []
        var out: [RuleMatch] = []
        for rule in config.deviceRules {
            var r = RuleMatch(
                label: rule.label, line: config.deviceRuleLines[rule.label] ?? 0, matchKeys: Self.keys(rule.match), devices: [],
                shadowed: [])
            for d in devices where rule.match.matches(d.description, node: d.node) {
                let device = Device(node: d.node, name: d.description.name)
                if taken.contains(d.node) { r.shadowed.append(device) } else { r.devices.append(device) }
                taken.insert(d.node)
            }
            out.append(r)
        }
        return out
    }

    static func keys(_ m: DeviceMatch) -> String {
        var parts: [String] = []
        if let n = m.name { parts.append("name = \"\(n)\"") }
        if let n = m.node { parts.append("node = \"\(n)\"") }
        if let b = m.bus { parts.append(String(cFormat: "bus = \"%04x\"", Int(b))) }
        if let v = m.vendor { parts.append(String(cFormat: "vendor = \"%04x\"", Int(v))) }
        if let p = m.product { parts.append(String(cFormat: "product = \"%04x\"", Int(p))) }
        if let u = m.uniq { parts.append("uniq = \"\(u)\"") }
        if !m.has.isEmpty { parts.append("has = [\(m.has.map { "\"\($0.name)\"" }.sorted().joined(separator: ", "))]") }
        return parts.joined(separator: ", ")
    }

    /// `file:line: [devices.x] (name = "…") matches /dev/input/event3 "shutter"`, or a warning
    /// when it matches nothing present.
    public func text(file: String) -> String {
        let at = line > 0 ? "\(file):\(line): " : "\(file): "
        let escaped = { (d: Device) in "\(d.node) \"\(d.name)\"" }
        var s: String
        if devices.isEmpty {
            s = "\(at)warning: [devices.\(label)] (\(matchKeys)) matches no present device"
            if !shadowed.isEmpty { s += " (\(shadowed.map(escaped).joined(separator: ", ")) taken by an earlier rule)" }
            s += "; evcapture devices lists the names and ids to match"
        } else {
            s = "\(at)[devices.\(label)] (\(matchKeys)) matches \(devices.map(escaped).joined(separator: ", "))"
            if !shadowed.isEmpty { s += "; \(shadowed.map(escaped).joined(separator: ", ")) taken by an earlier rule" }
        }
        return ReadableLines.escaped(s) + "\n"
    }
}

/// What `evcapture check-config` prints about a config that parsed: its warnings, which
/// present devices each rule matches, and whether the installed service could write the
/// output directory.
public enum ConfigCheck {
    /// The lines (each ending in a newline) and how many of them are warnings.
    public static func report(
        config: Config, file: String, inventory: DeviceInventory?, sandbox: ServiceSandbox?
    ) -> (text: String, warnings: Int) {
        var out = ""
        var warnings = 0
        for w in config.warnings {
            out += ReadableLines.escaped(w.description) + "\n"
            warnings += 1
        }
        if let inventory, !config.deviceRules.isEmpty {
            out += rulesText(config: config, file: file, inventory: inventory, warnings: &warnings)
        }
        if let dir = config.daemon.outputDirectory, let sandbox, let problem = sandbox.problem(writing: dir) {
            out += ReadableLines.escaped("\(file): warning: output.directory \(dir): \(problem)").replacing("\\n", with: "\n") + "\n"
            warnings += 1
        }
        if let http = config.daemon.http, let sandbox {
            let family = http.listen.host.utf8.contains(UInt8(ascii: ":")) ? "AF_INET6" : "AF_INET"
            if !sandbox.allows(family) {
                out +=
                    "\(file): warning: [http]: \(sandbox.unit) allows no \(family) socket (RestrictAddressFamilies): "
                    + "the service cannot listen on \(http.listen); docs/live-view.md shows the drop-in\n"
                warnings += 1
            }
        }
        return (out, warnings)
    }

    /// One line per rule: the devices it matches, or a warning. `evcapture devices --config` prints the same.
    public static func rulesText(config: Config, file: String, inventory: DeviceInventory, warnings: inout Int) -> String {
        if inventory.described.isEmpty && !inventory.unreadable.isEmpty {
            warnings += 1
            return "\(file): warning: cannot tell which devices the [devices.*] rules match: no input device could be opened "
                + "(\(inventory.unreadable.count) node(s) unreadable; evcapture devices says why)\n"
        }
        var out = ""
        for r in RuleMatch.report(config: config, devices: inventory.described) {
            if r.devices.isEmpty { warnings += 1 }
            out += r.text(file: file)
        }
        return out
    }
}
