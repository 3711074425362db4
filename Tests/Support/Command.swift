#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Where the tests, unit and system alike, find what the package built: the one locator of
/// the executables (the repository itself is ``Fixtures/repository``).
public enum DaemonPaths {
    /// `name` as `swift build --build-tests` builds it with this test bundle: beside the running
    /// bundle (both in `.build/debug/`; the system tests' libcamera 0.3 pass lays out the bundle
    /// and `evcapture` with that version's bridge in a directory of their own), else in
    /// `.build/debug/`. The first of them that is executable, else the latter (a test that
    /// runs it then fails naming it).
    public static func product(_ name: String) -> String {
        var candidates: [String] = []
        if let bundle = CommandLine.arguments.first {
            candidates.append(((bundle as NSString).deletingLastPathComponent as NSString).appendingPathComponent(name))
        }
        candidates.append(Fixtures.repository + "/.build/debug/" + name)
        return candidates.first { access($0, X_OK) == 0 } ?? candidates[candidates.count - 1]
    }

    /// The `evcapture` built with the tests (``product(_:)``).
    public static let evcapture = product("evcapture")

    /// ``evcapture`` when it is there, else nil (a suite that needs it is skipped with a reason).
    public static var executable: String? { access(evcapture, X_OK) == 0 ? evcapture : nil }
}

/// The built `evcapture` executable (``DaemonPaths/evcapture``), run as a person runs it.
public enum EvcaptureCommand {
    /// The executable is missing: a test that needs it fails (it never skips in silence).
    public struct Missing: Error, CustomStringConvertible {
        public var description: String { "\(DaemonPaths.evcapture) is not built (swift build --build-tests builds it)" }
    }

    /// Runs the binary (``runProgram(_:_:environment:)``) and collects its output.
    public static func run(_ args: [String]) throws -> ProgramResult {
        guard let path = DaemonPaths.executable else { throw Missing() }
        return try runProgram(path, args)
    }
}
