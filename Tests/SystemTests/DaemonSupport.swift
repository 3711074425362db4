#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import EvcaptureDaemon
import Camera
import Output
import ConfigFile
import Evdev
import Vocabulary
import Foundation
import Synchronization
import Testing

extension Trait where Self == ConditionTrait {
    /// The built `evcapture` executable must exist (`swift build` makes it).
    static var needsDaemonExecutable: Self {
        .enabled(
            if: DaemonPaths.executable != nil,
            Comment(rawValue: "needs the built evcapture executable (\(DaemonPaths.evcapture)); run swift build --build-tests"))
    }
}

/// A JSON line of the daemon, parsed.
typealias JSONObject = [String: Any]

extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
    func int(_ key: String) -> Int? { (self[key] as? NSNumber)?.intValue }
    func double(_ key: String) -> Double? { (self[key] as? NSNumber)?.doubleValue }
    func bool(_ key: String) -> Bool? { self[key] as? Bool }
    var event: String? { string("event") }
}

/// ffprobe, to decode a written video, when installed.
let daemonFFprobe = ["/usr/bin/ffprobe", "/usr/local/bin/ffprobe"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// Parses JSON lines; lines that are not JSON objects are skipped.
func parseJSONLines(_ lines: [String]) -> [JSONObject] {
    lines.compactMap { line in
        guard let data = line.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? JSONObject
    }
}

/// `evcapture run ...` as a child process (``TestChild``), its stdout (a pipe, unless the test
/// gives it one of its own) and stderr collected: the one daemon runner of the system tests.
final class DaemonProcess {
    let child: TestChild
    var pid: pid_t { child.pid }
    let arguments: [String]
    /// Names the transcript file.
    let label: String
    private let stdoutCollector: DescriptorCollector?
    private let stderrCollector: DescriptorCollector
    /// The exit status once the process was seen to exit (128 + the signal when killed).
    var exitStatus: Int32? { child.exitStatus }

    /// Starts the executable (by default evcapture) with `arguments`; `environment` replaces
    /// the test's own; `directory`: its working directory (nil: the test's); `stdout` is
    /// collected unless it is given elsewhere.
    init(
        _ label: String, executable: String? = nil, arguments: [String], environment: [String: String], directory: String? = nil,
        stdout: ChildOutput = .pipe
    ) throws {
        self.label = label
        guard let executable = executable ?? DaemonPaths.executable else {
            throw SpawnError(what: "no evcapture executable", errno: ENOENT)
        }
        self.arguments = arguments
        child = try TestChild([executable] + arguments, environment: environment, directory: directory, stdout: stdout, stderr: .pipe)
        stdoutCollector = child.stdout.map { DescriptorCollector(fd: $0, name: "daemon-stdout") }
        stderrCollector = DescriptorCollector(fd: child.stderr!, name: "daemon-stderr")
    }

    deinit {
        child.killAndReap()
        // Kept for a person reading a run: `.build-systest/out/daemon-*.log` on the host.
        if let out = ProcessInfo.processInfo.environment["EVCAPTURE_SYSTEST_OUT"], !out.isEmpty {
            _ = pollUntil(timeout: .seconds(2)) { stdoutFinished && stderrCollector.isFinished }
            try? transcript.write(toFile: "\(out)/daemon-\(label)-\(pid).log", atomically: true, encoding: .utf8)
        }
    }

    /// Complete stdout lines so far.
    var lines: [String] { stdoutCollector?.lines ?? [] }
    var stdout: String { stdoutCollector?.text ?? "" }
    /// Every byte of stdout read (stdout given elsewhere: nothing to read here).
    private var stdoutFinished: Bool { stdoutCollector?.isFinished ?? true }
    var stderr: String { stderrCollector.text }
    /// Stdout's JSON objects so far.
    var objects: [JSONObject] { parseJSONLines(lines) }

    /// For failure messages: the command, its status and output.
    var transcript: String {
        "evcapture \(arguments.joined(separator: " ")) (exit status \(exitStatus.map(String.init) ?? "running"))\n--- stdout\n\(stdout)--- stderr\n\(stderr)"
    }

    /// Waits for a JSON object that satisfies `matches` (looking at objects from index
    /// `from` on); returns it with its index, or nil after `timeout`.
    @discardableResult
    func waitFor(
        timeout: Duration = .seconds(20), from: Int = 0, _ matches: (JSONObject) -> Bool
    ) -> (index: Int, object: JSONObject)? {
        var found: (Int, JSONObject)?
        _ = pollUntil(timeout: timeout) {
            let all = objects
            if from < all.count, let i = all[from...].firstIndex(where: matches) {
                found = (i, all[i])
                return true
            }
            // Exited and all of its output read: nothing more will come.
            return !isRunning && stdoutFinished
        }
        return found
    }

    /// Waits until `count` objects satisfy `matches`; returns them (fewer after `timeout`).
    func waitForCount(
        _ count: Int, timeout: Duration = .seconds(20), from: Int = 0, _ matches: (JSONObject) -> Bool
    ) -> [JSONObject] {
        var found: [JSONObject] = []
        _ = pollUntil(timeout: timeout) {
            let all = objects
            found = from < all.count ? all[from...].filter(matches) : []
            return found.count >= count || (!isRunning && stdoutFinished)
        }
        return found
    }

    /// Whether the process is still running (reaps it when it has exited).
    var isRunning: Bool { child.isRunning }

    /// Waits for the process to exit; its status (128 + signal when killed), nil on timeout.
    @discardableResult
    func waitForExit(timeout: Duration = .seconds(20)) -> Int32? {
        _ = pollUntil(timeout: timeout) { !isRunning }
        // Let the collectors read the last output.
        if exitStatus != nil {
            _ = pollUntil(timeout: .seconds(5)) { stdoutFinished && stderrCollector.isFinished }
        }
        return exitStatus
    }

    /// Sends SIGTERM and waits for the exit status.
    @discardableResult
    func terminate(timeout: Duration = .seconds(20)) -> Int32? {
        if isRunning { kill(pid, SIGTERM) }
        return waitForExit(timeout: timeout)
    }
}

/// A client of the daemon's socket that reads everything on a thread of its own.
final class SocketClient {
    private let collector: DescriptorCollector
    init(path: String) throws {
        let fd = try SocketServer.connect(to: path)
        collector = DescriptorCollector(fd: fd, name: "socket-client")
    }
    var lines: [String] { collector.lines }
    var objects: [JSONObject] { parseJSONLines(lines) }
    var isClosedByServer: Bool { collector.isFinished }
}

/// The scratch directory of one daemon test: config, output, hooks, fake programs, state.
final class DaemonScratch {
    let directory: ScratchDirectory
    var path: String { directory.url.path }
    let label: String
    let output: String
    let bin: String

    init(_ label: String) throws {
        self.label = label
        directory = try ScratchDirectory(prefix: "daemon-\(label)")
        let base = directory.url.path
        output = base + "/out"
        bin = base + "/bin"
        for d in [output, bin, base + "/state", base + "/run", base + "/hooks", base + "/sound"] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        }
    }

    /// Writes a file; `executable` makes it mode 0755.
    @discardableResult
    func write(_ name: String, _ text: String, executable: Bool = false) throws -> String {
        let file = path + "/" + name
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        if executable { chmod(file, 0o755) }
        return file
    }

    /// The daemon's environment: the test's own, with fake programs in `bin` first on PATH and
    /// its state and runtime files here (nothing remembered from another run).
    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["PATH"] = bin + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["XDG_STATE_HOME"] = path + "/state"
        env["XDG_RUNTIME_DIR"] = path + "/run"
        env.removeValue(forKey: "RUNTIME_DIRECTORY")
        env.removeValue(forKey: "NOTIFY_SOCKET")
        return env
    }

    /// Fake sound players (`pw-play`, `paplay`, `aplay`): each appends its name and arguments
    /// to `sound/played` and exits. The daemon uses the first one it finds on PATH.
    func installFakeSoundPlayers() throws {
        for player in ["pw-play", "paplay", "aplay"] {
            try write(
                "bin/\(player)",
                """
                #!/bin/sh
                echo "\(player) $*" >> "\(path)/sound/played"
                """, executable: true)
        }
    }

    /// What the fake sound players were asked to play.
    var soundsPlayed: [String] {
        ((try? String(contentsOfFile: path + "/sound/played", encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    /// A hook program that writes its environment to `hooks/<press>-<EVCAPTURE_EVENT>.env`
    /// (atomically: written under a name of its own, then renamed over the last). Runs of one
    /// press and trigger can overlap (a countdown's seconds, on a loaded machine): each has its
    /// own temporary file, so neither renames the other's away.
    func installEnvironmentHook() throws -> String {
        try write(
            "bin/dump-env-hook",
            """
            #!/bin/sh
            out="\(path)/hooks/$EVCAPTURE_PRESS-$EVCAPTURE_EVENT.env"
            env > "$out.$$.tmp" && mv "$out.$$.tmp" "$out"
            """, executable: true)
    }

    /// The environment a hook recorded for `press` and trigger `event` (`click`, `began`, ...).
    func hookEnvironment(press: Int, event: String) -> [String: String]? {
        guard let text = try? String(contentsOfFile: "\(path)/hooks/\(press)-\(event).env", encoding: .utf8) else { return nil }
        var env: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { env[parts[0]] = parts[1] }
        }
        return env
    }
}

/// A virtual input device made from a fixture's description, for the daemon to find.
func fixtureDevice(_ fixture: String) throws -> UinputDevice {
    let recording = try EvemuRecording.load(path: Fixtures.evemu(fixture))
    return try UinputDevice(recording.description, autorepeat: false)
}

extension UinputDevice {
    /// Presses and releases `code`, each in its own frame; `hold` between them.
    func click(_ code: EventCode, hold: Duration? = nil) throws {
        try press(code)
        if let hold { Thread.sleep(forTimeInterval: Double(hold.components.seconds) + Double(hold.components.attoseconds) / 1e18) }
        try release(code)
    }

    func press(_ code: EventCode) throws {
        try write(code.type, code.code, 1)
        try write(.syn, 0, 0)
    }

    func release(_ code: EventCode) throws {
        try write(code.type, code.code, 0)
        try write(.syn, 0, 0)
    }

    /// One relative step frame (`REL_X +1` and so on).
    func move(_ code: EventCode, by value: Int32) throws {
        try write(code.type, code.code, value)
        try write(.syn, 0, 0)
    }
}

/// Predicates for the daemon's JSON objects.
enum DaemonLines {
    static func deviceAdded(_ node: String) -> (JSONObject) -> Bool {
        { $0.event == "device" && $0.string("change") == "added" && $0.string("node") == node }
    }
    static func capture(_ phase: String, node: String, press: Int? = nil) -> (JSONObject) -> Bool {
        {
            $0.event == "capture" && $0.string("phase") == phase && $0.string("node") == node
                && (press == nil || $0.int("press") == press)
        }
    }
    static func action(_ action: String, press: Int) -> (JSONObject) -> Bool {
        { $0.event == "action" && $0.string("action") == action && $0.int("press") == press }
    }
    static func session(_ state: String) -> (JSONObject) -> Bool {
        { $0.event == "session" && $0.string("state") == state }
    }
}

/// Whether the file starts with a JPEG SOI marker and ends with EOI.
func looksLikeJPEG(_ bytes: [UInt8]) -> Bool {
    bytes.count > 4 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[bytes.count - 2] == 0xFF && bytes[bytes.count - 1] == 0xD9
}

/// The daemon with photo and video off and `camera` (a node, or "none") for its controls,
/// started with `devices` and waited for until each one is added. The scratch directory
/// must outlive the daemon; terminate the daemon when done.
func startDaemonWithActionsOff(
    _ label: String, camera: String, devices: [UinputDevice], moreConfig: String = ""
) throws -> (scratch: DaemonScratch, daemon: DaemonProcess) {
    let scratch = try DaemonScratch(label)
    let config = try scratch.write(
        "evcapture.toml",
        """
        [camera]
        device = "\(camera)"

        [handlers.primary]
        click = "none"
        long-press = "none"
        \(moreConfig)
        """)
    let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
    for node in devices.map(\.node) where daemon.waitFor(DaemonLines.deviceAdded(node)) == nil {
        daemon.terminate()
        throw ProcessError(argv: daemon.arguments, problem: "\(node) was never added:\n\(daemon.transcript)")
    }
    return (scratch, daemon)
}
