#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing

/// `evcapture run --json` as the reliability tests drive it: the host-built debug
/// executable in a ``DaemonProcess`` (its stdout's JSON lines and stderr collected), a config
/// file in a scratch directory that is also its working directory and home, and the views of
/// /proc a test needs (open descriptors, liveness).
final class ReliabilityDaemon {
    let process: DaemonProcess
    let scratch: ScratchDirectory

    /// Starts the daemon with `config` (TOML text) and waits until its session started.
    init(config: String, arguments: [String] = [], user: (uid: uid_t, gid: gid_t, groups: [gid_t])? = nil) throws {
        scratch = try ScratchDirectory(prefix: "reliability")
        let configURL = scratch.url.appendingPathComponent("config.toml")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        var executable = DaemonPaths.evcapture
        var argv = ["run", "--json", "--config", configURL.path] + arguments
        if let user {
            // setpriv: the daemon as an unprivileged user with only these groups, no capabilities.
            argv =
                [
                    "--reuid=\(user.uid)", "--regid=\(user.gid)", "--groups=\(user.groups.map(String.init).joined(separator: ","))",
                    "--inh-caps=-all", "--", executable,
                ] + argv
            executable = "/usr/bin/setpriv"
        }
        var env = ProcessInfo.processInfo.environment
        // The caches stay the test run's (GStreamer's plugin registry, written at its first
        // load, read by every daemon after it: a machine keeps it between restarts too).
        if env["XDG_CACHE_HOME"] == nil, let home = env["HOME"] { env["XDG_CACHE_HOME"] = home + "/.cache" }
        env["HOME"] = scratch.url.path
        env["XDG_STATE_HOME"] = scratch.url.appendingPathComponent("state").path
        env["EVCAPTURE_OUTPUT"] = scratch.url.appendingPathComponent("photos").path
        env.removeValue(forKey: "NOTIFY_SOCKET")
        if user != nil {
            // the world must be able to reach the files (the scratch dir is root's)
            chmod(scratch.url.path, 0o777)
        }
        // hooks inherit the working directory: the security test's relative `touch` would land here
        process = try DaemonProcess("reliability", executable: executable, arguments: argv, environment: env, directory: scratch.url.path)
        guard pollUntil(timeout: .seconds(20), { !objects(event: "session").isEmpty || !process.isRunning }) else {
            throw ReliabilityError("the daemon did not start its session within 20 s\n\(self)")
        }
        guard process.isRunning else { throw ReliabilityError("the daemon exited at start\n\(self)") }
    }

    deinit {
        // SIGTERM first (a clean stop, as a person's), SIGKILL by the process's own deinit after.
        if process.isRunning { process.terminate(timeout: .seconds(10)) }
    }

    var pid: pid_t { process.pid }

    /// Every JSON object the daemon wrote so far.
    func objects() -> [[String: Any]] {
        process.lines.compactMap { line in
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
        guard process.isRunning else { return process.exitStatus }
        if let status = process.terminate(timeout: timeout) { return status }
        process.child.killAndReap()
        return nil
    }

    var stderr: String { process.stderr }
    var stdout: String { process.stdout }
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
