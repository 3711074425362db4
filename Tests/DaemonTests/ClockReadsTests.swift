import EvcaptureTesting
import Foundation
import Testing

/// docs/architecture.md#errors-and-habits, "The clock": the time that is kept or handed on is
/// read in one place, `Vocabulary/Clock.swift`; a read of a clock anywhere else in Sources is
/// one the page names with its reason. (Bounded waits measuring their own span with
/// `ContinuousClock`, `DispatchTime` or C++'s `steady_clock` are allowed everywhere and not
/// looked for.)
struct ClockReadsTests {
    /// What reads a clock directly, in Swift and in C.
    static let reads = [
        "clock_gettime(", "gettimeofday(", "time(NULL)", "time(nil)", "Date()", "Date.now", "eventLoop.now", "NIODeadline.now(",
        "system_clock::now", "high_resolution_clock::now", "g_get_monotonic_time", "g_get_real_time",
    ]

    /// The files that may, each with what docs/architecture.md says about it.
    static let named: [String: String] = [
        "Vocabulary/Clock.swift": "`Vocabulary/Clock.swift`",
        "ConcurrencyRuntime/MainThreadExecutor.swift": "The concurrency runtime reads the clock itself",
        "CGstRTSP/webrtc.c": "(`webrtc.c`, `monotonic_ns`)",
        "LiveView/ConnectionGuard.swift": "(`eventLoop.now`)",
        "LiveView/HTTPConnection.swift": "(`eventLoop.now`)",
        "LiveView/HTTPConnection+Changes.swift": "(`eventLoop.now`)",
    ]

    /// The live view's page is JavaScript that runs in the browser, on the browser's clock.
    static let notOurs: Set<String> = ["LiveView/LiveViewPage.swift"]

    static func reading(_ sources: String) throws -> [String: [String]] {
        var found: [String: [String]] = [:]
        let files = try #require(FileManager.default.enumerator(atPath: sources)?.allObjects as? [String])
        for file in files.sorted()
        where [".swift", ".c", ".h", ".cpp"].contains(where: file.hasSuffix) && !notOurs.contains(file) {
            let text = try String(contentsOfFile: sources + "/" + file, encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") || code.hasPrefix("*") || code.hasPrefix("/*") { continue }
                let beforeComment = code.components(separatedBy: " // ")[0]
                if reads.contains(where: beforeComment.contains) { found[file, default: []].append("\(file):\(n + 1): \(code)") }
            }
        }
        return found
    }

    @Test func clocksAreReadOnlyWhereTheArchitectureSays() throws {
        let found = try Self.reading(Fixtures.repository + "/Sources")
        let unnamed = found.filter { Self.named[$0.key] == nil }.values.flatMap { $0 }
        #expect(unnamed.isEmpty, "a clock read docs/architecture.md does not name:\n\(unnamed.joined(separator: "\n"))")
        // The one read is there, and so is each named one (a name left after its read went is stale).
        for file in Self.named.keys.sorted() { #expect(found[file] != nil, "\(file) reads no clock now: update docs/architecture.md") }
    }

    @Test func everyNamedReadIsInTheArchitecture() throws {
        // Compared word by word: where the page's lines break does not matter.
        func words(_ s: String) -> String { s.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        let page = words(try String(contentsOfFile: Fixtures.repository + "/docs/architecture.md", encoding: .utf8))
        for (file, phrase) in Self.named.sorted(by: { $0.key < $1.key }) {
            #expect(page.contains(words(phrase)), "docs/architecture.md does not name \(file) (\(phrase))")
        }
    }

    /// The scan finds a read: one in a file of its own, outside every named place, is reported.
    @Test func aReadElsewhereIsFound() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/LiveView", withIntermediateDirectories: true)
        try "// clock_gettime( in a comment\nlet x = 1\n".write(toFile: dir + "/LiveView/Quiet.swift", atomically: true, encoding: .utf8)
        try "    var now = timespec()\n    clock_gettime(CLOCK_REALTIME, &now)\n".write(
            toFile: dir + "/LiveView/MediaDirectory.swift", atomically: true, encoding: .utf8)
        let found = try Self.reading(dir)
        #expect(Array(found.keys) == ["LiveView/MediaDirectory.swift"])
        #expect(found["LiveView/MediaDirectory.swift"] == ["LiveView/MediaDirectory.swift:2: clock_gettime(CLOCK_REALTIME, &now)"])
    }
}
