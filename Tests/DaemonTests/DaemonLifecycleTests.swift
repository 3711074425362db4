#if canImport(Glibc)
import Glibc
#endif
import ConfigFile
import EvcaptureDaemon
import EvcaptureTesting
import Foundation
import Testing

/// docs/architecture.md#start-and-stop: whatever `Daemon.run` started is stopped in one order,
/// also when a part's start fails part-way.
@Suite struct DaemonLifecycleTests {
    /// The live view cannot bind its port (another program has it) after the socket, the
    /// actions' workers and the line writer started: `run` throws that error and leaves no
    /// thread of its own running. The daemon runs in a child process (this test bundle again,
    /// running only this test), so that no other test's threads are counted.
    @Test func aStartThatFailsPartWayLeavesNothingRunning() async throws {
        if let dir = ProcessInfo.processInfo.environment["EVCAPTURE_TEST_LIFECYCLE_DIR"] {
            try await Self.failingStart(in: dir)
            return
        }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var env = ProcessInfo.processInfo.environment
        env["EVCAPTURE_TEST_LIFECYCLE_DIR"] = dir
        let child = try runThisTestAlone("aStartThatFailsPartWayLeavesNothingRunning", environment: env)
        let text = child.stdout + child.stderr
        #expect(child.status == 0, "the child's half:\n\(text)")
        #expect(text.contains("the start failed: "), "the child's half:\n\(text)")
    }

    /// The child's half: a port taken, the daemon started on it, then its threads looked at.
    static func failingStart(in dir: String) async throws {
        let taken = try TCPListener()
        let config = try Config.parse(
            """
            [camera]
            device = "none"
            [output]
            directory = "\(dir)"
            [sound]
            play = "off"
            [http]
            listen = "127.0.0.1:\(taken.port)"
            """, file: "lifecycle.toml")
        let threadsBefore = Self.daemonThreads()
        #expect(threadsBefore.isEmpty, "\(threadsBefore)")
        let socket = dir + "/s.sock"
        let daemon = Daemon(config: config, output: DaemonOutputOptions(socketPath: socket, stdout: false), logger: testLogger)
        let error = await #expect(throws: (any Error).self) { try await daemon.run() }
        print("the start failed: \(error.map { "\($0)" } ?? "-")")
        #expect("\(error.map { "\($0)" } ?? "")".contains("\(taken.port)"), "the live view's bind failed")
        var left: [String] = []
        let none = pollUntil(timeout: .seconds(5)) {
            left = Self.daemonThreads()
            return left.isEmpty
        }
        #expect(none, "threads left running: \(left)")
        #expect(access(socket, F_OK) != 0, "the socket is still there")
    }

    /// The names of this process's threads that are the daemon's (`evc-…`).
    static func daemonThreads() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }.filter { $0.hasPrefix("evc-") }.sorted()
    }
}
