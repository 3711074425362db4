import EvcaptureTesting
import Foundation
import Testing

@testable import ConfigFile

/// The docs are part of the code (docs/configuration.md): every TOML example the README,
/// docs/ and the shipped config show is a config the reader takes, and every key the reader
/// takes is documented.
@Suite struct DocsConfigTests {
    /// The ```toml blocks of a Markdown file under the repository, numbered from 1.
    static func tomlBlocks(_ file: String) throws -> [(number: Int, text: String)] {
        let text = try String(contentsOfFile: Fixtures.repository + "/" + file, encoding: .utf8)
        return text.components(separatedBy: "```toml\n").dropFirst().enumerated().map {
            ($0.offset + 1, $0.element.components(separatedBy: "```")[0])
        }
    }

    static var markdownFiles: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: Fixtures.repository + "/docs")) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }

    @Test func everyTOMLExampleInTheREADMEAndTheDocsParses() throws {
        var count = 0
        for file in Self.markdownFiles {
            for (number, block) in try Self.tomlBlocks(file) {
                count += 1
                #expect(throws: Never.self, "\(file), toml block \(number)") { _ = try Config.parse(block, file: "\(file)#\(number)") }
            }
        }
        #expect(count >= 12, "\(count) blocks: the search found the examples")
    }

    /// The shipped /etc/evcapture/config.toml with every commented-out setting (`#key = …`,
    /// `#[table]`: a `#` right before the text; prose has a space after it) switched on.
    @Test func theShippedConfigParsesWithItsSettingsUncommented() throws {
        let text = try String(contentsOfFile: Fixtures.repository + "/packaging/deb/config.toml", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let on = lines.map { line -> Substring in
            guard line.hasPrefix("#"), let next = line.dropFirst().first, next != " ", next != "#" else { return line }
            return line.dropFirst()
        }
        #expect(on.count { !$0.hasPrefix("#") && !$0.isEmpty } >= 30, "the settings were found")
        #expect(throws: Never.self) { _ = try Config.parse(text, file: "config.toml") }
        #expect(throws: Never.self) { _ = try Config.parse(on.joined(separator: "\n"), file: "config.toml (uncommented)") }
    }

    /// Every table path the reader checks and the keys it takes there, from the reader itself:
    /// each key is tried as a table, an array of tables and a table of labelled tables
    /// (`[devices.LABEL]`), and what the reader then checks is added. Labels are `LABEL`.
    static func acceptedKeys() -> [[String]: [String]] {
        let census = KeyCensus()
        func parse(_ text: String) {
            _ = try? Config.parse(text, file: "census.toml", environment: ["HOME": "/home/census"], census: census)
        }
        func header(_ path: [String]) -> String { "[" + path.joined(separator: ".") + "]\n" }
        parse("")
        var done: Set<[String]> = []
        var labelled: [[String]: [String]] = [:]  // the path written → the path documented
        while true {
            let accepted = census.accepted.withLock { $0 }
            guard let (path, keys) = accepted.first(where: { !done.contains($0.key) }) else { break }
            done.insert(path)
            guard !path.contains(where: { $0.hasPrefix("[") }) else { continue }  // keys of an array's table are leaves here
            for key in keys {
                let sub = path + [key]
                parse(header(sub))
                if census.accepted.withLock({ $0[sub] }) != nil { continue }
                parse("[[" + sub.joined(separator: ".") + "]]\n")
                if census.accepted.withLock({ $0[sub + ["[0]"]] }) != nil { continue }
                parse(header(sub + ["zz-label"]))
                if census.accepted.withLock({ $0[sub + ["zz-label"]] }) != nil { labelled[sub + ["zz-label"]] = sub + ["LABEL"] }
            }
        }
        var out: [[String]: [String]] = [:]
        for (path, keys) in census.accepted.withLock({ $0 }) {
            out[labelled[path] ?? path.map { $0.hasPrefix("[") ? "[]" : $0 }] = keys
        }
        return out
    }

    /// docs/configuration.md's section for top-level table `name` (`## \`[name]\``, `[[name]]`, `[name.LABEL]`).
    static func section(_ name: String, in doc: String) -> Substring? {
        doc.components(separatedBy: "\n## ").dropFirst().first { heading in
            ["`[\(name)]`", "`[[\(name)]]`", "`[\(name)."].contains { heading.hasPrefix($0) }
        }.map { Substring($0) }
    }

    @Test func everyKeyTheReaderTakesIsInTheConfigurationPage() throws {
        let accepted = Self.acceptedKeys()
        let root = try #require(accepted[[]])
        // What the probe must find, or it found nothing: tables, an array of tables, labels.
        #expect(root.contains("output") && accepted[["hooks", "[]"]] != nil && accepted[["devices", "LABEL"]] != nil, "\(accepted.keys)")
        #expect(accepted[["output"]]?.contains("video-keyframe-interval") == true)
        let doc = try String(contentsOfFile: Fixtures.repository + "/docs/configuration.md", encoding: .utf8)
        let contents = doc.components(separatedBy: "\n## ")[0]
        for table in root {
            let s = Self.section(table, in: doc)
            #expect(s != nil, "docs/configuration.md has no section for [\(table)]")
            #expect(contents.contains("[`[\(table)") || contents.contains("[`[[\(table)"), "[\(table)] is not in the page's contents")
            for (path, keys) in accepted where path.first == table {
                // A key, or a table written as its header (`[handlers.primary]`).
                for key in keys
                where !(s.map { $0.contains("`\(key)`") || $0.contains("[\((path + [key]).joined(separator: "."))]") } ?? false) {
                    Issue.record("docs/configuration.md's [\(table)] section does not name \((path + [key]).joined(separator: "."))")
                }
            }
        }
    }
}
