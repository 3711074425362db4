import Foundation
import Vocabulary

/// The shipped `udev-rules/70-evcapture.rules`, evaluated the way udev would for the
/// matches the rules use (`ATTRS{id/bustype}`, `ATTRS{id/vendor}`, `ATTRS{id/product}`,
/// `ATTRS{name}` with a trailing `*`), so tests can give a recording the `EVCAPTURE_ROLE`
/// a live device with its identity gets.
public enum ShippedUdevRules {
    public static let path = Fixtures.repository + "/udev-rules/70-evcapture.rules"

    /// The `EVCAPTURE_ROLE` the rules assign to `d` (the last assignment that matches), or nil.
    public static func role(for d: DeviceDescription) throws -> String? {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var role: String?
        for line in text.split(separator: "\n") where line.contains("ENV{EVCAPTURE_ROLE}=\"") {
            var matches = true
            var assigned: String?
            for (key, value) in items(line) {
                switch key {
                case "ATTRS{id/bustype}==": matches = matches && value == hex(d.bus.rawValue)
                case "ATTRS{id/vendor}==": matches = matches && value == hex(d.vendor)
                case "ATTRS{id/product}==": matches = matches && value == hex(d.product)
                case "ATTRS{name}==":
                    matches = matches && (value.hasSuffix("*") ? d.name.hasPrefix(value.dropLast()) : d.name == value)
                case "ENV{EVCAPTURE_ROLE}=": assigned = value
                case "ENV{EVCAPTURE_ROLE}==": matches = false  // the uaccess line: no assignment
                default: matches = false  // a match this evaluator does not know: never guess
                }
            }
            if matches, let assigned { role = assigned }
        }
        return role
    }

    /// `KEY{attr}OP"value"` items of a rule line as (`KEY{attr}OP`, value); commas inside
    /// the quotes (EVCAPTURE_ROLE lists) stay in the value.
    static func items(_ line: Substring) -> [(String, String)] {
        var items: [(String, String)] = []
        var key = "", value = "", inQuotes = false
        for c in line {
            if inQuotes {
                if c == "\"" {
                    items.append((key.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: ","))), value))
                    key = ""
                    value = ""
                    inQuotes = false
                } else {
                    value.append(c)
                }
            } else if c == "\"" {
                inQuotes = true
            } else {
                key.append(c)
            }
        }
        return items
    }

    private static func hex(_ v: UInt16) -> String {
        let digits = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
