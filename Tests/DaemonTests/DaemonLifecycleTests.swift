#if canImport(Glibc)
import Glibc
#endif
import ConfigFile
@testable import EvcaptureDaemon
import EvcaptureTesting
import Foundation
import Runtime
import ServiceLifecycle
import Synchronization
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
        let config = try Self.config(in: dir, "[http]\nlisten = \"127.0.0.1:\(taken.port)\"")
        let threadsBefore = Self.daemonThreads()
        #expect(threadsBefore.isEmpty, "\(threadsBefore)")
        let socket = dir + "/s.sock"
        let daemon = Daemon(config: config, output: DaemonOutputOptions(socketPath: socket, stdout: false), logger: testLogger)
        let error = await #expect(throws: (any Error).self) { try await daemon.run() }
        print("the start failed: \(error.map { "\($0)" } ?? "-")")
        #expect("\(error.map { "\($0)" } ?? "")".contains("\(taken.port)"), "the live view's bind failed")
        let left = Self.threadsLeft()
        #expect(left.isEmpty, "threads left running: \(left)")
        #expect(access(socket, F_OK) != 0, "the socket is still there")
    }

    /// A daemon that ran (its socket, line writers, live view and WebRTC, actions, booth clock,
    /// devices and watcher) and is asked to stop — gracefully as SIGTERM asks, by cancelling its
    /// task, or as the library's `CaptureSession.stop()` does: its services stop one by one in
    /// the reverse of their order, and no thread of its own is left. While it ran, each of its
    /// threads was named and in docs/architecture.md#threads under one of the services.
    @Test func aRunningDaemonStopsItsServicesInReverseOrder() async throws {
        let key = "EVCAPTURE_TEST_SERVICES_DIR"
        if let dir = ProcessInfo.processInfo.environment[key] {
            // One after the other: each counts the process's threads when it is done.
            for how in Stop.allCases { try await Self.runAndStop(in: dir, how) }
            return
        }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var env = ProcessInfo.processInfo.environment
        env[key] = dir
        let child = try runThisTestAlone("aRunningDaemonStopsItsServicesInReverseOrder", environment: env)
        let text = child.stdout + child.stderr
        #expect(child.status == 0, "the child's half:\n\(text)")
        for how in Stop.allCases {
            #expect(
                text.contains("\(how.rawValue): stopped in order: watcher devices booth actions live-view webrtc lines input"),
                "the child's half:\n\(text)")
        }
    }

    enum Stop: String, CaseIterable { case shutDown = "shut down", cancelled, captureSession = "capture session" }

    /// The child's half: a daemon started, then asked to stop; its log and threads looked at.
    static func runAndStop(in dir: String, _ how: Stop) async throws {
        let socket = dir + "/\(how).sock"
        let port = try MosquittoBroker.freePort()
        let config = try Self.config(
            in: dir, "[socket]\npath = \"\(socket)\"\n[handlers.primary]\ncountdown = 2\n[http]\nlisten = \"127.0.0.1:\(port)\"")
        let log = RecordedLog()
        var running: [String] = []
        switch how {
        case .shutDown, .cancelled:
            let ready = OneShotFlag()
            let daemon = Daemon(config: config, output: DaemonOutputOptions(stdout: false), logger: log.logger, onReady: { ready.set() })
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)], logger: log.logger))
            let task = Task { try await group.run() }
            #expect(await eventually(seconds: 10) { ready.isSet }, "the daemon got ready: \(log.lines)")
            #expect(access(socket, F_OK) == 0, "the socket is there while it runs")
            running = Self.runningThreads()
            if how == .cancelled { task.cancel() } else { await group.triggerGracefulShutdown() }
            _ = try? await task.value
        case .captureSession:
            let session = CaptureSession(
                interaction: CaptureEventInteraction(primary: { _ in }), camera: nil, config: config, logger: log.logger)
            session.start()
            var started = false
            for await event in session.events {
                if case .session(let change) = event, change.state == .started {
                    started = true
                    break
                }
            }
            #expect(started, "the session started: \(log.lines)")
            #expect(access(socket, F_OK) == 0, "the socket is there while it runs")
            running = Self.runningThreads()
            await session.stop()
        }
        let stopped = log.lines.compactMap { line -> String? in
            guard line.hasPrefix("debug: stopped service=") else { return nil }
            return String(line.dropFirst("debug: stopped service=".count))
        }
        print("\(how.rawValue): stopped in order: \(stopped.joined(separator: " "))")
        #expect(stopped == ["watcher", "devices", "booth", "actions", "live-view", "webrtc", "lines", "input"], "\(how): \(log.lines)")
        // docs/architecture.md#threads: each of its threads is in the table, under a service that ran
        // (or under none: the library's handler threads).
        let table = try Self.documentedThreads()
        for thread in running {
            let services = table.filter { thread == $0.name || ($0.name.hasSuffix("-N") && thread.hasPrefix($0.name.dropLast())) }.map(
                \.service)
            #expect(
                services.contains { stopped.contains($0) || $0.hasPrefix("—") },
                "\(how): \(thread) is under \(services) in docs/architecture.md#threads")
        }
        for thread in Self.expectedThreads {
            #expect(running.contains(thread), "\(how): \(thread) was not running: \(running)")
        }
        let left = Self.threadsLeft()
        #expect(left.isEmpty, "\(how): threads left running: \(left)")
        #expect(access(socket, F_OK) != 0, "\(how): the socket is gone")
    }

    /// A daemon with no camera and no sound, its files in `dir`, and `more` of the config.
    static func config(in dir: String, _ more: String) throws -> Config {
        try Config.parse(
            "[camera]\ndevice = \"none\"\n[output]\ndirectory = \"\(dir)\"\n[sound]\nplay = \"off\"\n\(more)\n", file: "lifecycle.toml")
    }

    /// The threads every daemon of these tests runs, once started: each is started on its own
    /// (a worker's thread after its service is up, SwiftNIO's loop named by a job on it).
    static let expectedThreads = [
        "evc-input", "evc-lines", "evc-photos", "evc-videos", "evc-hooks", "evc-sounds", "evc-booth", "evc-live-view",
    ]

    /// The daemon's threads once all of ``expectedThreads`` are there and named (or after 10 s).
    static func runningThreads() -> [String] {
        var threads: [String] = []
        _ = pollUntil(timeout: .seconds(10)) {
            threads = Self.daemonThreads()
            return expectedThreads.allSatisfy(threads.contains)
        }
        return threads
    }

    /// docs/architecture.md#threads: each thread name in the table's first column (`evc-video-N`
    /// stands for any number), with the service in the second.
    static func documentedThreads() throws -> [(name: String, service: String)] {
        let page = try String(contentsOfFile: Fixtures.repository + "/docs/architecture.md", encoding: .utf8)
        let section = try #require(page.components(separatedBy: "## Threads").dropFirst().first?.components(separatedBy: "\n## ").first)
        return section.split(separator: "\n").filter { $0.hasPrefix("| ") }.flatMap { row -> [(name: String, service: String)] in
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { return [] }
            let names = cells[0].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map {
                String($0.element)
            }
            return names.filter { $0.hasPrefix("evc-") }.flatMap { name in
                cells[1].split(separator: ",").map { (name, $0.trimmingCharacters(in: .whitespaces)) }
            }
        }
    }

    /// The daemon's threads still running after 5 s (none, once it stopped).
    static func threadsLeft() -> [String] {
        var left: [String] = []
        _ = pollUntil(timeout: .seconds(5)) {
            left = Self.daemonThreads()
            return left.isEmpty
        }
        return left
    }

    /// The names of this process's threads that are the daemon's (`evc-…`).
    static func daemonThreads() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }.filter { $0.hasPrefix("evc-") }.sorted()
    }
}

/// Set once, read from any thread.
final class OneShotFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
