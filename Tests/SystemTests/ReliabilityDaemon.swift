#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing
import Capture

/// `evcapture run --json` as the reliability tests drive it: the host-built debug
/// executable, a config file, stdout (JSON lines) and stderr in files, and the views of
/// /proc a test needs (open descriptors, liveness).
final class ReliabilityDaemon {
    let process = Process()
    let scratch: ScratchDirectory
    let stdoutURL: URL
    let stderrURL: URL

    /// Starts the daemon with `config` (TOML text) and waits until its session started.
    init(config: String, arguments: [String] = [], user: (uid: uid_t, gid: gid_t, groups: [gid_t])? = nil) throws {
        scratch = try ScratchDirectory(prefix: "reliability")
        let configURL = scratch.url.appendingPathComponent("config.toml")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        stdoutURL = scratch.url.appendingPathComponent("stdout.jsonl")
        stderrURL = scratch.url.appendingPathComponent("stderr.log")
        FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: stdoutURL)
        let err = try FileHandle(forWritingTo: stderrURL)
        defer {
            try? out.close()
            try? err.close()
        }
        var argv = [DaemonPaths.evcapture, "run", "--json", "--config", configURL.path] + arguments
        if let user {
            // setpriv: the daemon as an unprivileged user with only these groups, no capabilities.
            argv =
                [
                    "setpriv", "--reuid=\(user.uid)", "--regid=\(user.gid)",
                    "--groups=\(user.groups.map(String.init).joined(separator: ","))", "--inh-caps=-all", "--",
                ] + argv
        }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = argv
        var env = ProcessInfo.processInfo.environment
        // The caches stay the test run's (GStreamer's plugin registry, written at its first
        // load, read by every daemon after it: a machine keeps it between restarts too).
        if env["XDG_CACHE_HOME"] == nil, let home = env["HOME"] { env["XDG_CACHE_HOME"] = home + "/.cache" }
        env["HOME"] = scratch.url.path
        env["XDG_STATE_HOME"] = scratch.url.appendingPathComponent("state").path
        env["EVCAPTURE_OUTPUT"] = scratch.url.appendingPathComponent("photos").path
        env.removeValue(forKey: "NOTIFY_SOCKET")
        process.environment = env
        // hooks inherit this: the security test's relative `touch` would land here
        process.currentDirectoryURL = scratch.url
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        if user != nil {
            // the world must be able to reach the files (the scratch dir is root's)
            chmod(scratch.url.path, 0o777)
        }
        guard pollUntil(timeout: .seconds(20), { !objects(event: "session").isEmpty || !process.isRunning }) else {
            throw ReliabilityError("the daemon did not start its session within 20 s\n\(self)")
        }
        guard process.isRunning else { throw ReliabilityError("the daemon exited at start\n\(self)") }
    }

    deinit {
        if process.isRunning {
            process.terminate()
            _ = waitForExit(process, timeout: .seconds(10))
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    var pid: pid_t { process.processIdentifier }

    /// Every JSON object the daemon wrote so far.
    func objects() -> [[String: Any]] {
        let text = (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    func objects(event: String) -> [[String: Any]] { objects().filter { $0["event"] as? String == event } }

    /// Capture objects of one phase.
    func captures(_ phase: String) -> [[String: Any]] {
        objects(event: "capture").filter { $0["phase"] as? String == phase }
    }

    /// Waits until `condition` holds for the objects written so far.
    @discardableResult
    func waitFor(timeout: Duration = .seconds(10), _ condition: ([[String: Any]]) -> Bool) -> Bool {
        pollUntil(timeout: timeout) { condition(objects()) || !process.isRunning } && process.isRunning
    }

    /// Open file descriptors of the daemon (/proc/PID/fd), by what they point at.
    func openDescriptors() -> [String] {
        let dir = "/proc/\(pid)/fd"
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return fds.compactMap { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(dir)/\(fd)")).map { "\(fd) → \($0)" }
        }.sorted()
    }

    /// SIGTERM, then the exit status (nil if it had to be killed after `timeout`).
    func stop(timeout: Duration = .seconds(15)) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        if waitForExit(process, timeout: timeout) { return process.terminationStatus }
        kill(pid, SIGKILL)
        process.waitUntilExit()
        return nil
    }

    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }
    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
}

extension ReliabilityDaemon: CustomStringConvertible {
    var description: String {
        let out = stdout.split(separator: "\n").suffix(40).joined(separator: "\n")
        return "--- daemon stdout (last 40 lines)\n\(out)\n--- daemon stderr\n\(stderr.suffix(4000))"
    }
}

struct ReliabilityError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Presses whose `began` has no `ended` or `cancelled` (with the same press id), and
/// ends without a `began`.
func unmatchedPresses(_ objects: [[String: Any]]) -> (open: [Int], orphans: [Int]) {
    var open = Set<Int>(), orphans: [Int] = []
    for o in objects where o["event"] as? String == "capture" {
        guard let press = o["press"] as? Int, let phase = o["phase"] as? String else { continue }
        switch phase {
        case "began": open.insert(press)
        case "ended", "cancelled": if open.remove(press) == nil { orphans.append(press) }
        default: break
        }
    }
    return (open.sorted(), orphans)
}

/// The daemon config the reliability tests start from: no photos or videos (the capture
/// actions are not under test), no sound.
func reliabilityConfig(camera: String = "none", extra: String = "") -> String {
    """
    [camera]
    device = "\(camera)"
    [handlers.primary]
    click = "none"
    long-press = "none"
    [sound]
    play = "off"
    \(extra)
    """
}
