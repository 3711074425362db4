#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Foundation
import Testing

/// The tests' one locator (docs/testing.md): what the package built is found through
/// `DaemonPaths`, the repository through `Fixtures.repository`, by unit and system tests alike.
struct DaemonPathsTests {
    /// The `evcapture` built with this bundle, beside it: not another build's.
    @Test func evcaptureIsTheOneBuiltBesideThisTestBundle() throws {
        let bundleDirectory = (CommandLine.arguments[0] as NSString).deletingLastPathComponent
        #expect(DaemonPaths.evcapture == bundleDirectory + "/evcapture")
        #expect(DaemonPaths.executable == DaemonPaths.evcapture)
        let version = try EvcaptureCommand.run(["--version"])
        #expect(version.status == 0 && !version.stdout.isEmpty, "\(version)")
    }

    /// A product that is nowhere is named where `swift build` would put it, so a test that
    /// runs it fails saying which file is missing.
    @Test func aMissingProductIsNamedInTheBuildDirectory() {
        #expect(DaemonPaths.product("evcapture-no-such-product") == Fixtures.repository + "/.build/debug/evcapture-no-such-product")
    }

    @Test func theRepositoryIsTheOneTheseSourcesAreIn() {
        #expect(FileManager.default.fileExists(atPath: Fixtures.repository + "/Package.swift"))
        #expect(#filePath.hasPrefix(Fixtures.repository + "/Tests/EvcaptureTestingTests/"), "\(Fixtures.repository)")
    }

    /// No test finds the build or the repository its own way: no path into `.build/` and no
    /// variable naming the repository outside the locator (the guest sees the host's tree at
    /// the same paths, so the sources' own path serves there too).
    @Test func noTestHasALocatorOfItsOwn() throws {
        let tests = Fixtures.repository + "/Tests"
        let locator = tests + "/Support/Command.swift"
        var found: [String] = []
        let files = try #require(FileManager.default.enumerator(atPath: tests)?.allObjects as? [String])
        for file in files where file.hasSuffix(".swift") && !file.hasPrefix("Fuzz/") && tests + "/" + file != locator {
            let text = try String(contentsOfFile: tests + "/" + file, encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//") else { continue }
                if code.contains("\".build/") || code.contains("/.build/") || code.contains("\"EVCAPTURE_REPO\"") {
                    found.append("Tests/\(file):\(n + 1): \(code)")
                }
            }
        }
        // This file names them itself, as strings to look for.
        #expect(found.filter { !$0.hasPrefix("Tests/EvcaptureTestingTests/DaemonPathsTests.swift:") }.isEmpty, "\(found)")
    }
}
