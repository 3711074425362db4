import Foundation

#if canImport(Glibc)
import Glibc
import EvcaptureTesting
#endif

/// What a finished program left behind.
struct ProcessResult: Sendable, CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var succeeded: Bool { status == 0 }

    var description: String {
        "exit status \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)"
    }
}

/// A program that could not be run at all, or ran too long.
struct ProcessError: Error, CustomStringConvertible {
    var argv: [String]
    var problem: String

    var description: String { "\(argv.joined(separator: " ")): \(problem)" }
}

/// Runs a program (found on `PATH` unless `argv[0]` is a path) to completion and returns its
/// status and output. A program still running after `timeout` is killed and reported.
@discardableResult
func run(_ argv: String..., timeout: Duration = .seconds(60)) throws -> ProcessResult {
    try run(argv, timeout: timeout)
}

/// Array form of ``run(_:timeout:)-(String...,_)``; `environment` replaces the test
/// process's environment for the program when given.
@discardableResult
func run(_ argv: [String], environment: [String: String]? = nil, timeout: Duration = .seconds(60)) throws -> ProcessResult {
    precondition(!argv.isEmpty, "run needs a program")
    // Output goes to files rather than pipes: no reader thread, and no deadlock when a
    // program writes more than a pipe buffer before it exits.
    let scratch = try ScratchDirectory(prefix: "run")
    let outURL = scratch.url.appendingPathComponent("stdout")
    let errURL = scratch.url.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let outHandle = try FileHandle(forWritingTo: outURL)
    let errHandle = try FileHandle(forWritingTo: errURL)
    defer {
        try? outHandle.close()
        try? errHandle.close()
    }

    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = argv
    if let environment { process.environment = environment }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = outHandle
    process.standardError = errHandle
    do {
        try process.run()
    } catch {
        throw ProcessError(argv: argv, problem: "cannot start: \(error)")
    }
    if !waitForExit(process, timeout: timeout) {
        process.terminate()
        _ = waitForExit(process, timeout: .seconds(2))
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        throw ProcessError(argv: argv, problem: "still running after \(timeout), killed")
    }
    let stdout = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
    let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
    return ProcessResult(status: process.terminationStatus, stdout: stdout, stderr: stderr)
}

/// Polls until `process` has exited; false when `timeout` passed first.
func waitForExit(_ process: Process, timeout: Duration) -> Bool {
    pollUntil(timeout: timeout) { !process.isRunning }
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
