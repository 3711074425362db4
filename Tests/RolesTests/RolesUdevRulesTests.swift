#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Testing

/// Syntax sanity of `udev-rules/*.rules`: every line is a comment, blank, or comma-separated
/// `KEY[{attr}]OP"value"` items udev knows; GOTOs have labels; every EVCAPTURE_ROLE value is
/// one evcapture understands.
@Suite struct RolesUdevRulesTests {
    static let rulesPath = Fixtures.repository + "/udev-rules/70-evcapture.rules"

    struct Item: Equatable {
        var key: String
        var attribute: String?
        var op: String
        var value: String
    }

    static let matchKeys: Set<String> = [
        "ACTION", "SUBSYSTEM", "SUBSYSTEMS", "KERNEL", "KERNELS", "ATTR", "ATTRS", "ENV", "TAG", "DRIVERS", "PROGRAM",
    ]
    static let assignKeys: Set<String> = ["GROUP", "MODE", "OWNER", "ENV", "TAG", "GOTO", "LABEL", "SYMLINK", "RUN"]

    /// Splits one rule line into items, honouring quotes; nil with a problem for bad syntax.
    static func parse(_ line: String) -> Result<[Item], RuleProblem> {
        var items: [Item] = []
        var rest = Substring(line)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," }
            if rest.isEmpty { break }
            let key = rest.prefix { $0.isUppercase || $0 == "_" }
            guard !key.isEmpty else { return .failure(RuleProblem("expected a key at \"\(rest.prefix(20))\"")) }
            rest = rest.dropFirst(key.count)
            var attribute: String?
            if rest.first == "{" {
                guard let close = rest.firstIndex(of: "}") else { return .failure(RuleProblem("unclosed { after \(key)")) }
                attribute = String(rest[rest.index(after: rest.startIndex)..<close])
                rest = rest[rest.index(after: close)...]
            }
            let op = ["==", "!=", "+=", "-=", ":=", "="].first { rest.hasPrefix($0) }
            guard let op else { return .failure(RuleProblem("no operator after \(key)")) }
            rest = rest.dropFirst(op.count)
            guard rest.first == "\"" else { return .failure(RuleProblem("value of \(key) is not quoted")) }
            rest = rest.dropFirst()
            guard let end = rest.firstIndex(of: "\"") else { return .failure(RuleProblem("unterminated value of \(key)")) }
            items.append(Item(key: String(key), attribute: attribute, op: op, value: String(rest[..<end])))
            rest = rest[rest.index(after: end)...]
            guard rest.isEmpty || rest.first == "," else { return .failure(RuleProblem("expected , after \(key)")) }
        }
        return .success(items)
    }

    struct RuleProblem: Error, Equatable, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    @Test func everyRuleLineIsWellFormed() throws {
        let text = try String(decoding: readAll(Self.rulesPath), as: UTF8.self)
        var gotos: Set<String> = [], labels: Set<String> = [], roles: [String] = []
        var lineNumber = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let trimmed = line.drop { $0 == " " }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let items: [Item]
            switch Self.parse(String(trimmed)) {
            case .success(let i): items = i
            case .failure(let p):
                Issue.record("70-evcapture.rules:\(lineNumber): \(p)")
                continue
            }
            #expect(!items.isEmpty)
            let isMatch = { (i: Item) in i.op == "==" || i.op == "!=" }
            for item in items {
                let known = isMatch(item) ? Self.matchKeys.contains(item.key) : Self.assignKeys.contains(item.key)
                #expect(
                    known, "70-evcapture.rules:\(lineNumber): \(item.key)\(item.op) is not a udev \(isMatch(item) ? "match" : "assignment")"
                )
                if ["ATTR", "ATTRS", "ENV"].contains(item.key) {
                    #expect(item.attribute != nil, "70-evcapture.rules:\(lineNumber): \(item.key) needs {name}")
                }
                if item.key == "GOTO" { gotos.insert(item.value) }
                if item.key == "LABEL" { labels.insert(item.value) }
                if item.key == "MODE" { #expect(item.value == "0660", "70-evcapture.rules:\(lineNumber): nodes stay group-only") }
                if item.key == "ENV", item.attribute == "EVCAPTURE_ROLE", !isMatch(item) { roles.append(item.value) }
            }
            // A role assignment always has something to match on.
            if items.contains(where: { $0.attribute == "EVCAPTURE_ROLE" && !isMatch($0) }) {
                #expect(items.contains(where: isMatch), "70-evcapture.rules:\(lineNumber): role without a match")
            }
        }
        #expect(gotos.isSubset(of: labels), "GOTO without LABEL: \(gotos.subtracting(labels))")
        // Device knowledge is evcapture's own (the known-device table): the rules set no role.
        #expect(roles.isEmpty, "roles in the shipped rules: \(roles)")
        for command in ["udevadm info", "udevadm test", "udevadm trigger"] {
            #expect(text.split(separator: "\n").prefix(20).contains { $0.hasPrefix("#") && $0.contains(command) })
        }
    }

    @Test func theSyntaxCheckRejectsBrokenLines() throws {
        #expect(throws: RuleProblem.self) { try Self.parse(#"KERNEL=="event*" GROUP="input""#).get() }
        #expect(throws: RuleProblem.self) { try Self.parse(#"ENV{EVCAPTURE_ROLE="knob""#).get() }
        #expect(throws: RuleProblem.self) { try Self.parse(#"ATTRS{name}==AB"#).get() }
        #expect(throws: RuleProblem.self) { try Self.parse(#"KERNEL=="event*", GROUP="input"#).get() }
        #expect(
            try Self.parse(#"ATTRS{id/vendor}=="077d", ENV{EVCAPTURE_ROLE}="dial""#).get() == [
                Item(key: "ATTRS", attribute: "id/vendor", op: "==", value: "077d"),
                Item(key: "ENV", attribute: "EVCAPTURE_ROLE", op: "=", value: "dial"),
            ])
    }
}

private func readAll(_ path: String) throws -> [UInt8] {
    guard let f = fopen(path, "rb") else { throw RolesUdevRulesTests.RuleProblem("cannot open \(path)") }
    defer { fclose(f) }
    var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&chunk, 1, chunk.count, f)
        if n == 0 { break }
        bytes += chunk[0..<n]
    }
    return bytes
}
