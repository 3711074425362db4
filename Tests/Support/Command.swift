#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The built `evcapture` executable, run as a person runs it.
public enum EvcaptureCommand {
    /// `.build/debug/evcapture`, which `swift build --build-tests` builds with the tests.
    public static let path = Fixtures.repository + "/.build/debug/evcapture"

    /// The executable is missing: a test that needs it fails (it never skips in silence).
    public struct Missing: Error, CustomStringConvertible {
        public var description: String { "\(EvcaptureCommand.path) is not built (swift build --build-tests builds it)" }
    }

    /// Runs the binary (``runProgram(_:_:environment:)``) and collects its output.
    public static func run(_ args: [String]) throws -> ProgramResult {
        guard FileManager.default.isExecutableFile(atPath: path) else { throw Missing() }
        return try runProgram(path, args)
    }
}
