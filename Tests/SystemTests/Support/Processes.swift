import Foundation

#if canImport(Glibc)
import Glibc
import EvcaptureTesting
#endif

/// A program that could not be run at all, or ran too long.
struct ProcessError: Error, CustomStringConvertible {
    var argv: [String]
    var problem: String

    var description: String { "\(argv.joined(separator: " ")): \(problem)" }
}

/// Runs a program (found on `PATH` unless `argv[0]` is a path) to completion and returns its
/// status and output. A program still running after `timeout` is killed and reported.
@discardableResult
func run(_ argv: String..., timeout: Duration = .seconds(60)) throws -> ProgramResult {
    try run(argv, timeout: timeout)
}

/// Array form of ``run(_:timeout:)-(String...,_)``; `environment` replaces the test
/// process's environment for the program when given.
@discardableResult
func run(_ argv: [String], environment: [String: String]? = nil, timeout: Duration = .seconds(60)) throws -> ProgramResult {
    precondition(!argv.isEmpty, "run needs a program")
    do {
        return try runProgram(argv[0], Array(argv.dropFirst()), environment: environment, timeout: timeout)
    } catch {
        throw ProcessError(
            argv: argv, problem: error.errno == ETIMEDOUT ? "still running after \(timeout), killed" : "cannot start: \(error)")
    }
}

/// A directory under `$TMPDIR` that is removed when the value is released.
final class ScratchDirectory {
    let url: URL

    init(prefix: String) throws {
        let base = FileManager.default.temporaryDirectory
        url = base.appendingPathComponent("evcapture-\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
