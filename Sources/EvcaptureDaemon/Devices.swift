#if canImport(Glibc)
import Glibc
#endif
import Capture
import Evdev
import Vocabulary
import FoundationEssentials
import Udev
import Camera
import Output
import ConfigFile

/// One input device as `evcapture devices` shows it: identity, kind and every role with
/// its reason. The JSON field names are stable.
public struct DeviceReport: Sendable, Hashable {
    public var node: String
    public var name: String
    public var bus: Int
    public var vendor: Int
    public var product: Int
    public var version: Int
    public var uniq: String?
    public var phys: String?
    /// What it was taken for (`buttons`, `headset`, `knob`, `dial`, ...).
    public var kind: String
    /// Code name → role (`"KEY_VOLUMEDOWN": "primary"`); codes not listed are ignored.
    public var roles: [String: String]
    /// Code name → why, and from where (`default`, `udev`, `config`).
    public var reasons: [String: String]
    public var sources: [String: String]
    /// Code name → step per press, for keys that move a slider (knobs).
    public var steps: [String: Int]
    /// Axes read as position counters (`slider:counter`), by code name.
    public var counters: [String]
    /// Axes read as a held position that moves at a rate (`slider:rate`), by code name.
    public var rates: [String]
    /// The physical device it belongs to (`phys` without `/inputN`, with `uniq`), if known.
    public var parent: String?
    /// Other nodes of the same device it is paired with.
    var pairedWith: [Partner]

    /// A paired node: `encoder` (this node is its push switch) or `push-switch`.
    struct Partner: Sendable, Hashable {
        public var node: String
        public var name: String
        public var relation: String
    }
    public var dedicated: Bool
    public var headset: Bool
    /// The raw `EVCAPTURE_ROLE`, when udev set one.
    public var udevRole: String?
    public var warnings: [String]

    public init(profile p: DeviceProfile, udevRole: String?) {
        let d = p.description
        node = p.node
        name = d.name
        bus = Int(d.bus.rawValue)
        vendor = Int(d.vendor)
        product = Int(d.product)
        version = Int(d.version)
        uniq = d.uniq.flatMap { $0.isEmpty ? nil : $0 }
        phys = d.phys.flatMap { $0.isEmpty ? nil : $0 }
        kind = p.kind.rawValue
        var roles: [String: String] = [:], reasons: [String: String] = [:], sources: [String: String] = [:]
        var steps: [String: Int] = [:], counters: [String] = [], rates: [String] = []
        for (code, a) in p.roles {
            roles[code.name] = a.role.rawValue
            reasons[code.name] = a.reason
            sources[code.name] = a.source.rawValue
            if a.step != 0 { steps[code.name] = a.step }
            if a.reading == .counter && a.role == .slider { counters.append(code.name) }
            if a.reading == .rate && a.role == .slider { rates.append(code.name) }
        }
        self.counters = counters.sorted()
        self.rates = rates.sorted()
        parent = RoleClassifier.parent(of: d)
        pairedWith = p.partners.map { Partner(node: $0.node, name: $0.name, relation: $0.relation.rawValue) }
        self.roles = roles
        self.reasons = reasons
        self.sources = sources
        self.steps = steps
        dedicated = p.isDedicated
        headset = p.isHeadset
        self.udevRole = udevRole
        warnings = p.warnings
    }
}

/// The result of looking at every input device once.
public struct DeviceInventory: Sendable {
    public var devices: [DeviceReport]
    /// Nodes that exist but could not be opened, with why.
    public var unreadable: [(node: String, error: EvdevError)]
    /// Where the list came from: udev enumeration or a scan of /dev/input.
    var listedBy: String
    /// Every device opened, as the kernel describes it: what config rules match against.
    public var described: [(node: String, description: DeviceDescription)] = []

    /// Opens every evdev node once (no waiting), classifies it and closes it again.
    /// - Parameter overrides: config overrides for a device, if the config has any.
    public static func take(
        overrides: (DeviceDescription, String) -> RoleOverrides? = { _, _ in nil }
    ) -> DeviceInventory {
        var nodes: [(node: String, role: String?)]
        var listedBy = "udev"
        if let found = try? UdevInputMonitor.enumerateNow(), !found.isEmpty {
            nodes = found.map { ($0.node, $0.role) }
        } else {
            listedBy = "/dev/input"
            nodes = scanDevInput().map { ($0, nil) }
        }
        var profiles: [(profile: DeviceProfile, udevRole: String?)] = []
        var unreadable: [(node: String, error: EvdevError)] = []
        for (node, udevRole) in nodes {
            do {
                let device = try EvdevDevice.open(node)
                let profile = RoleClassifier.profile(
                    for: device.description, node: node, udevRole: udevRole,
                    config: overrides(device.description, node))
                device.close()
                profiles.append((profile, udevRole))
            } catch {
                unreadable.append((node, error))
            }
        }
        // Paired as the daemon pairs them: every node present, each classified alone first.
        let paired = RoleClassifier.pair(profiles.map(\.profile))
        let devices = zip(paired, profiles).map { DeviceReport(profile: $0, udevRole: $1.udevRole) }
        return DeviceInventory(
            devices: devices, unreadable: unreadable, listedBy: listedBy,
            described: profiles.map { ($0.profile.node, $0.profile.description) })
    }

    static func scanDevInput() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/input")) ?? []
        return names.filter { $0.hasPrefix("event") }
            .sorted { (Int($0.dropFirst(5)) ?? 0) < (Int($1.dropFirst(5)) ?? 0) }
            .map { "/dev/input/\($0)" }
    }

    /// The JSON array `evcapture devices --json` prints (keys in alphabetical order).
    public func json() -> String {
        JSONValue.array(devices.map(\.json)).pretty
    }

    /// The human-readable listing, ending with a line about unreadable nodes if any.
    public func text() -> String {
        var out = ""
        for d in devices {
            let id = String(cFormat: "%04x:%04x", d.vendor, d.product)
            var flags = [d.kind]
            if d.dedicated { flags.append("grabbed while running") }
            if d.headset { flags.append("headset: plays the shutter sound") }
            out +=
                "\(ReadableLines.escaped(d.node))  \"\(ReadableLines.escaped(d.name))\"  bus \(BusType(rawValue: UInt16(d.bus))) \(id)  [\(flags.joined(separator: ", "))]\n"
            if let role = d.udevRole { out += "    EVCAPTURE_ROLE=\(role)\n" }
            if d.roles.isEmpty { out += "    (no key or axis with a role)\n" }
            for code in d.roles.keys.sorted() {
                let role = d.roles[code]!
                let step =
                    d.steps[code].map { $0 > 0 ? " +\($0)" : " \($0)" }
                    ?? (d.counters.contains(code) ? ":counter" : d.rates.contains(code) ? ":rate" : "")
                let padded = code.rightPadded(to: max(code.count, 20))
                out += "    \(padded) \((role + step).rightPadded(to: 14)) \(d.reasons[code] ?? "")\n"
            }
            for p in d.pairedWith {
                let what = p.relation == DevicePartner.Relation.encoder.rawValue ? "push switch of" : "pushed by"
                out += "    \(what) \(p.node) \"\(p.name)\" (same parent \(d.parent ?? "?"))\n"
            }
            for w in d.warnings { out += "    warning: \(ReadableLines.escaped(w))\n" }
        }
        if devices.isEmpty {
            out += noDevicesExplanation()
        } else if !unreadable.isEmpty {
            out +=
                "\(unreadable.count) more node(s) could not be opened: \(ReadableLines.escaped(unreadable.map { $0.error.description }.joined(separator: "; ")))\n"
        }
        return out
    }

    /// Why nothing is listed, and what to do.
    public func noDevicesExplanation() -> String {
        if unreadable.isEmpty {
            return "No input devices found (no /dev/input/event* nodes; listed by \(listedBy)).\n"
        }
        var out = "No readable input devices: \(unreadable.count) node(s) could not be opened.\n"
        for u in unreadable.prefix(5) { out += "  \(u.error)\n" }
        if unreadable.contains(where: { $0.error.code == .permissionDenied }) {
            out += """
                Reading input devices needs permission: install the udev rules and join the groups
                they name, then log in again:
                  sudo cp udev-rules/70-evcapture.rules /etc/udev/rules.d/
                  sudo udevadm control --reload && sudo udevadm trigger --action=change --subsystem-match=input
                  sudo usermod -aG input,video "$USER"

                """
        }
        return out
    }
}

extension DeviceReport {
    /// One device of `evcapture devices --json`: keys in alphabetical order, absent values left out.
    public var json: JSONValue {
        func table<V>(_ d: [String: V], _ f: (V) -> JSONValue) -> JSONValue {
            .object(d.sorted { $0.key < $1.key }.map { ($0.key, f($0.value)) })
        }
        var fields: [(String, JSONValue)] = [
            ("bus", .int(Int64(bus))), ("counters", .array(counters.map { .string($0) })), ("dedicated", .bool(dedicated)),
            ("headset", .bool(headset)), ("kind", .string(kind)), ("name", .string(name)), ("node", .string(node)),
            (
                "paired_with",
                .array(
                    pairedWith.map {
                        .object([("name", .string($0.name)), ("node", .string($0.node)), ("relation", .string($0.relation))])
                    })
            ),
        ]
        if let parent { fields.append(("parent", .string(parent))) }
        if let phys { fields.append(("phys", .string(phys))) }
        fields += [
            ("product", .int(Int64(product))), ("rates", .array(rates.map { .string($0) })), ("reasons", table(reasons) { .string($0) }),
            ("roles", table(roles) { .string($0) }),
            ("sources", table(sources) { .string($0) }), ("steps", table(steps) { .int(Int64($0)) }),
        ]
        if let udevRole { fields.append(("udev_role", .string(udevRole))) }
        if let uniq { fields.append(("uniq", .string(uniq))) }
        fields += [("vendor", .int(Int64(vendor))), ("version", .int(Int64(version))), ("warnings", .array(warnings.map { .string($0) }))]
        return .object(fields)
    }
}
