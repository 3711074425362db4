#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// The fake UVC camera and vivid as the lab script (Tests/V4L2Lab/camera-tests.sh) provides
/// them inside the VM. To be replaced by the harness's `FakeCamera` when it lands.
enum CameraLab {
    static let environment = ProcessInfo.processInfo.environment

    /// Why the fake UVC camera tests cannot run here, or nil when they can.
    static var uvcUnavailable: String? {
        guard let dir = environment["EVCAPTURE_TEST_UVC_LAB"] else {
            return "no fake UVC camera: run inside the VM (Tests/V4L2Lab/camera-tests.sh)"
        }
        guard let node = try? String(contentsOfFile: dir + "/node", encoding: .utf8), access(trimmed(node), R_OK | W_OK) == 0
        else { return "fake UVC camera node not accessible" }
        return nil
    }

    /// Why the vivid tests cannot run here, or nil when they can.
    static var vividUnavailable: String? {
        guard let node = environment["EVCAPTURE_TEST_VIVID"] else {
            return "no vivid device: run inside the VM (Tests/V4L2Lab/camera-tests.sh)"
        }
        return access(node, R_OK | W_OK) == 0 ? nil : "vivid node \(node) not accessible"
    }

    static var vividNode: String { environment["EVCAPTURE_TEST_VIVID"]! }

    /// The fake camera's current `/dev/videoN` (it can change across stop/start).
    static var uvcNode: String {
        trimmed((try? String(contentsOfFile: environment["EVCAPTURE_TEST_UVC_LAB"]! + "/node", encoding: .utf8)) ?? "")
    }

    /// Every value the fake camera received since it last started, as `"zoom_absolute = 300"`.
    static func received() -> [String] {
        let log = (try? String(contentsOfFile: environment["EVCAPTURE_TEST_UVC_LOG"] ?? "/run/vmlab/fakeuvc.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            line.hasPrefix("fakeuvc: SET_CUR ") ? String(line.dropFirst("fakeuvc: SET_CUR ".count)) : nil
        }
    }

    /// How many values the camera has received, once that number stops changing. The camera
    /// logs a value a moment after the write that sent it returned, so counts taken right
    /// after a write can be short.
    static func settledCount() async -> Int {
        var count = received().count
        var stableSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            let now = received().count
            if now != count {
                count = now
                stableSince = ContinuousClock.now
            } else if ContinuousClock.now - stableSince >= .milliseconds(400) {
                break
            }
        }
        return count
    }

    /// What the camera received after the first `count` values, once it has settled.
    static func received(since count: Int) async -> [String] {
        let settled = await settledCount()
        return Array(received().prefix(settled).dropFirst(count))
    }

    /// Disconnects the fake camera (the USB device goes away; uvcvideo unregisters the node).
    static func stop() throws { try request("stop") }
    /// Connects it again (fresh: its controls are back at their defaults).
    static func start() throws { try request("start") }

    private static func request(_ command: String) throws {
        let dir = environment["EVCAPTURE_TEST_UVC_LAB"]!
        unlink(dir + "/reply")
        try command.write(toFile: dir + "/request.tmp", atomically: false, encoding: .utf8)
        rename(dir + "/request.tmp", dir + "/request")
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let reply = try? String(contentsOfFile: dir + "/reply", encoding: .utf8) {
                guard trimmed(reply) == "0" else { throw LabError(message: "fake camera \(command) failed: \(reply)") }
                return
            }
            usleep(100_000)
        }
        throw LabError(message: "fake camera \(command): no answer from the lab script in 60 s")
    }

    private static func trimmed(_ s: String) -> String { s.trimmingCharacters(in: .whitespacesAndNewlines) }
}

struct LabError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Collects what an async sequence delivers, so a test can wait for an element with a timeout
/// (TCG is slow: waits are several seconds, polling at 50 ms).
final class Collected<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let t = Task { [self] in
            do {
                for try await element in sequence { self.items.withLock { $0.append(element) } }
            } catch {}
        }
        task.withLock { $0 = t }
    }

    var all: [Element] { items.withLock { $0 } }

    /// The first element (from `after` on) matching `predicate`, waiting up to `timeout`.
    func first(
        after start: Int = 0, timeout: Duration = .seconds(15), where predicate: (Element) -> Bool
    ) async -> (index: Int, element: Element)? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let snapshot = all
            if start < snapshot.count, let i = snapshot[start...].firstIndex(where: predicate) { return (i, snapshot[i]) }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    func cancel() { task.withLock { $0?.cancel() } }
}

/// Runs a program to completion: exit status, stdout, stderr. posix_spawn with the output in
/// temporary files (Foundation's Process needs a socketpair for its run loop, which hangs in
/// the VM's chroot).
func labRunProgram(_ path: String, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    let dir = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
    let outPath = "\(dir)/evcapture-test-\(getpid())-out"
    let errPath = "\(dir)/evcapture-test-\(getpid())-err"
    defer { unlink(outPath); unlink(errPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
    guard rc == 0 else { throw LabError(message: "spawning \(path): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    return (exit, out, err)
}

/// The built `evcapture` executable (next to the test bundle in `.build/debug`).
var evcaptureExecutable: String {
    if let path = ProcessInfo.processInfo.environment["EVCAPTURE_EXECUTABLE"] { return path }
    return FileManager.default.currentDirectoryPath + "/.build/debug/evcapture"
}
