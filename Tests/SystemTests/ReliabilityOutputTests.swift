#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Evdev
import Foundation
import Output
import Synchronization
import Testing

/// The daemon's outputs under hostile readers (docs/behaviour.md#reliability): a stdout nobody
/// reads, a stdout that goes away, SIGHUP, and a socket when the process is out of file
/// descriptors. The daemon runs as a child whose stdout is a pipe the test controls; the
/// evidence comes through the socket.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct ReliabilityOutputTests {
    /// `evcapture run --json --socket PATH` (a ``DaemonProcess``), stdout where the test says
    /// (a pipe whose other end the test keeps or closes, or /dev/null), stderr collected.
    final class Daemon {
        let process: DaemonProcess
        let scratch: DaemonScratch
        let socketPath: String
        var pid: pid_t { process.pid }
        var exitStatus: Int32? { process.exitStatus }

        init(_ label: String, stdout: ChildOutput) throws {
            scratch = try DaemonScratch(label)
            socketPath = scratch.path + "/run/s.sock"
            let config = try scratch.write(
                "evcapture.toml",
                """
                [camera]
                device = "none"
                [handlers.primary]
                click = "none"
                long-press = "none"
                [sound]
                play = "off"
                """)
            // As a shell starts it: default dispositions (SIGPIPE kills, SIGHUP kills).
            process = try DaemonProcess(
                label, arguments: ["run", "--json", "--config", config, "--socket", socketPath], environment: scratch.environment,
                stdout: stdout)
        }

        var stderr: String { process.stderr }

        var isRunning: Bool { process.isRunning }

        /// Sends `signal`; the exit status and how long the exit took (nil: still running
        /// after `timeout`).
        func stop(with signal: Int32 = SIGTERM, timeout: Duration = .seconds(10)) -> (status: Int32, took: Duration)? {
            let start = ContinuousClock.now
            kill(pid, signal)
            guard pollUntil(timeout: timeout, { !isRunning }), let status = exitStatus else { return nil }
            return (status, ContinuousClock.now - start)
        }

        /// A daemon whose stdout is /dev/null.
        convenience init(_ label: String) throws { try self.init(label, stdout: .null) }

        /// A socket client, and the volume-keys fixture device once the client has seen it added.
        func connectWithKeys() throws -> (SocketClient, UinputDevice) {
            let client = try connect()
            let keys = try fixtureDevice("gpio-keys-volume-keys")
            try #require(
                pollUntil(timeout: .seconds(20)) { client.objects.contains(where: DaemonLines.deviceAdded(keys.node)) }, "\(stderr)")
            return (client, keys)
        }

        /// A socket client once the socket exists.
        func connect() throws -> SocketClient {
            try #require(pollUntil(timeout: .seconds(20)) { access(socketPath, F_OK) == 0 || !isRunning }, "no socket\n\(stderr)")
            return try SocketClient(path: socketPath)
        }

        /// CPU time (user + system) the daemon used so far, in clock ticks.
        var cpuTicks: Int {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return -1 }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command: state is field 3, utime 14 and stime 15 (1-based, whole line).
            return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        }
    }

    static func endedPresses(_ client: SocketClient, node: String) -> Set<Int> {
        Set(client.objects.filter(DaemonLines.capture("ended", node: node)).compactMap { $0.int("press") })
    }

    /// Clicks until `count` presses ended on the socket (paced: the kernel's per-reader
    /// buffer holds only a few presses); false when they stop arriving.
    static func click(_ keys: UinputDevice, _ count: Int, seenBy client: SocketClient) throws -> Bool {
        let before = endedPresses(client, node: keys.node).count
        var clicked = 0
        while clicked < count {
            for _ in 0..<min(10, count - clicked) { try keys.click(.volumeDown) }
            clicked = min(clicked + 10, count)
            guard pollUntil(timeout: .seconds(10), { endedPresses(client, node: keys.node).count >= before + clicked }) else {
                return false
            }
        }
        return true
    }

    /// `evcapture run --json | sleep 999`: stdout's pipe fills and stays full. Socket
    /// clients keep getting every press, and SIGTERM ends the daemon as it ends one whose
    /// stdout is read, plus the 300 ms stdout gets for the last lines (docs/behaviour.md):
    /// the same daemon with stdout on /dev/null, stopped first in the same VM, is the measure.
    @Test(.timeLimit(.minutes(3))) func aStdoutNobodyReadsBlocksNothingElse() throws {
        let baseline: Duration
        do {
            let free = try Daemon("stdout-free")
            let (client, keys) = try free.connectWithKeys()
            #expect(try Self.click(keys, 10, seenBy: client))
            let stopped = try #require(free.stop(), "\(free.stderr)")
            baseline = stopped.took
        }
        var out: [Int32] = [0, 0]
        try #require(pipe(&out) == 0)
        for fd in out { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(out[0]) }  // kept open and never read: writes block, no EPIPE
        // One page of pipe (F_SETPIPE_SZ, 1031 in <fcntl.h>; Glibc does not export it) holds
        // about 20 capture lines, so 100 presses (200 lines) block stdout early on.
        let capacity = fcntl(out[1], 1031, 4096)
        try #require(capacity >= 4096, "F_SETPIPE_SZ: errno \(errno)")
        let daemon = try Daemon("stdout-blocked", stdout: .descriptor(out[1]))
        close(out[1])
        let (client, keys) = try daemon.connectWithKeys()

        let flowed = try Self.click(keys, 100, seenBy: client)
        var pending: Int32 = 0
        _ = ioctl(out[0], UInt(FIONREAD), &pending)
        // full: what is left is less than one line (a line is a few hundred bytes)
        #expect(pending > capacity - 1024, "stdout's pipe is full (\(pending) of \(capacity) bytes waiting)")
        #expect(
            flowed,
            "presses stopped reaching the socket with stdout blocked (\(Self.endedPresses(client, node: keys.node).count) of 100)\n\(daemon.stderr)"
        )
        let stopped = daemon.stop()
        #expect(stopped?.status == 0, "\(daemon.stderr)")
        // Twice the baseline: emulated timings drift by 2x within one boot.
        let bound = baseline * 2 + .milliseconds(300 + 500)
        #expect(
            stopped.map { $0.took <= bound } ?? false,
            "SIGTERM took \(stopped.map { "\($0.took)" } ?? "forever") with stdout blocked, \(baseline) with stdout read")
        #expect(client.objects.contains(where: DaemonLines.session("stopped")), "the socket got the last line")
        print(
            "stdout blocked: \(pending) bytes waiting in the pipe, \(Self.endedPresses(client, node: keys.node).count) presses on the socket, SIGTERM → exit \(stopped.map { "\($0.status) in \($0.took)" } ?? "none") (stdout read: \(baseline))"
        )
    }

    /// `evcapture run --json | head -1`: the reader exits after one line. The daemon runs
    /// on (SIGPIPE ignored, EPIPE ends the stdout writer) and its socket clients get every press.
    @Test(.timeLimit(.minutes(2))) func aStdoutThatGoesAwayEndsOnlyItsWriter() throws {
        var out: [Int32] = [0, 0]
        try #require(pipe(&out) == 0)
        for fd in out { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let daemon = try Daemon("stdout-head", stdout: .descriptor(out[1]))
        close(out[1])
        let client = try daemon.connect()
        // `head -1`: one line, then gone.
        var byte: UInt8 = 0
        while read(out[0], &byte, 1) == 1 && byte != 10 {}
        close(out[0])
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        try #require(
            pollUntil(timeout: .seconds(20)) { client.objects.contains(where: DaemonLines.deviceAdded(keys.node)) || !daemon.isRunning },
            "\(daemon.stderr)")
        let flowed = try Self.click(keys, 20, seenBy: client)
        #expect(daemon.isRunning, "the daemon died (exit status \(daemon.exitStatus ?? -1); 141 is SIGPIPE)\n\(daemon.stderr)")
        #expect(flowed, "\(daemon.stderr)")
        #expect(daemon.stop()?.status == 0, "\(daemon.stderr)")
    }

    /// SIGHUP is a clean stop: the last lines are written and the exit status is 0.
    @Test(.timeLimit(.minutes(2))) func sighupIsACleanStop() throws {
        let daemon = try Daemon("sighup")
        let client = try daemon.connect()
        try #require(pollUntil(timeout: .seconds(20)) { daemon.stderr.contains("ready:") }, "\(daemon.stderr)")
        let stopped = daemon.stop(with: SIGHUP)
        #expect(stopped?.status == 0, "exit status \(stopped.map { "\($0.status)" } ?? "none") (129: killed by SIGHUP)\n\(daemon.stderr)")
        #expect(pollUntil(timeout: .seconds(2)) { client.objects.contains(where: DaemonLines.session("stopped")) }, "\(client.lines)")
        #expect(daemon.stderr.contains("stopped"))
    }

    /// prlimit(1) on a running process (prlimit(2) is not in Swift's Glibc module).
    static func setFileLimit(of pid: pid_t, to limit: Int) throws {
        let result = try runProgram("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(limit):\(limit)"])
        try #require(result.succeeded, "prlimit --pid \(pid) --nofile=\(limit): \(result)")
    }

    /// The daemon out of file descriptors (its limit lowered to what it has open plus 3):
    /// clients past that are accepted and closed with the reserve descriptor, the listening
    /// socket does not make the daemon spin, presses keep reaching the clients it has, and
    /// a client is accepted again once descriptors are free.
    @Test(.timeLimit(.minutes(2))) func acceptOutOfDescriptorsDoesNotSpin() throws {
        let daemon = try Daemon("emfile")
        let (first, keys) = try daemon.connectWithKeys()
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd").count) ?? 0
        try #require(open > 0)
        try Self.setFileLimit(of: daemon.pid, to: open + 2)

        // Two fit; the rest find the process out of descriptors.
        var clients: [SocketClient] = []
        for _ in 0..<10 { clients.append(try SocketClient(path: daemon.socketPath)) }
        let refused = pollUntil(timeout: .seconds(10)) { clients.filter(\.isClosedByServer).count >= 8 }
        #expect(refused, "\(clients.filter(\.isClosedByServer).count) of 10 closed\n\(daemon.stderr)")
        let ticksBefore = daemon.cpuTicks
        Thread.sleep(forTimeInterval: 2)
        let ticks = daemon.cpuTicks - ticksBefore
        let hz = Int(sysconf(Int32(_SC_CLK_TCK)))
        #expect(ticks < hz / 5, "the daemon used \(ticks) ticks (of \(hz)/s) in 2 s idle: spinning on accept\n\(daemon.stderr)")
        #expect(daemon.stderr.contains("socket client refused: out of file descriptors"), "\(daemon.stderr)")
        #expect(try Self.click(keys, 5, seenBy: first), "presses still reach the first client")

        // Descriptors back: new clients are accepted again.
        try Self.setFileLimit(of: daemon.pid, to: 1024)
        let late = try SocketClient(path: daemon.socketPath)
        #expect(try Self.click(keys, 2, seenBy: late), "a client connected later gets lines")
        #expect(daemon.stop()?.status == 0)
        print(
            "out of descriptors: \(clients.filter(\.isClosedByServer).count) of 10 clients closed at once, \(ticks) CPU ticks in the 2 s after (\(hz)/s)"
        )
    }
}
