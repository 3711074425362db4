import CLinuxShims
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A real mosquitto broker (Debian's `mosquitto`) on a free 127.0.0.1 port, for one test:
/// its own config, password file and log in a scratch directory; stopped, killed and
/// started again on the same port by the test. Plus the command-line clients
/// (`mosquitto_sub`, `mosquitto_pub`) as the independent other end.
public final class MosquittoBroker: @unchecked Sendable {
    // @unchecked: a test drives it from one task at a time; `process` is only touched there.
    public static let executable = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"].first { FileManager.default.isExecutableFile(atPath: $0) }
    public static var skipReason: String? {
        executable == nil || !FileManager.default.isExecutableFile(atPath: "/usr/bin/mosquitto_sub")
            ? "needs mosquitto and mosquitto-clients (apt-get install mosquitto mosquitto-clients)" : nil
    }

    public let port: Int
    public let directory: String
    public let users: [String: String]
    /// The TLS listener's port (`tls` given to init), beside the plain one the test's own
    /// command-line clients use.
    public let tlsPort: Int?
    /// Every address and port the broker listens on: ``start()`` waits for all of them.
    private let listeners: [(address: String, port: Int)]
    private var process: SpawnedChild?

    /// `users`: name → password; none: anonymous clients are allowed. `tls`: also a TLS
    /// listener on 127.0.0.1 with this certificate and key.
    public init(directory: String, users: [String: String] = [:], tls: (certificate: String, key: String)? = nil) throws {
        self.directory = directory
        self.users = users
        port = try Self.freePort()
        tlsPort = tls == nil ? nil : try Self.freePort()
        var listeners = [(address: "127.0.0.1", port: port)]
        var conf = """
            listener \(port) 127.0.0.1
            persistence false
            log_dest file \(directory)/mosquitto.log
            log_type all

            """
        if geteuid() == 0 { conf += "user root\n" }
        if users.isEmpty {
            conf += "allow_anonymous true\n"
        } else {
            let file = directory + "/passwords"
            for (i, (name, password)) in users.sorted(by: { $0.key < $1.key }).enumerated() {
                let argv = ["/usr/bin/mosquitto_passwd", "-b"] + (i == 0 ? ["-c"] : []) + [file, name, password]
                let r = try Self.run(argv)
                guard r.status == 0 else { throw BrokerError("mosquitto_passwd: \(r.output)") }
            }
            chmod(file, 0o600)
            conf += "allow_anonymous false\npassword_file \(file)\n"
        }
        if let tls, let tlsPort {
            // After the global settings: the lines below a `listener` line are that listener's.
            conf += "listener \(tlsPort) 127.0.0.1\ncertfile \(tls.certificate)\nkeyfile \(tls.key)\n"
            listeners.append((address: "127.0.0.1", port: tlsPort))
            // TLS clients connect to "localhost" (the name the certificate is checked
            // against). Where that is ::1 first (Debian 13's /etc/hosts), libmosquitto's
            // non-blocking connect takes the first address, so the broker is there too.
            if Self.localhostHasIPv6 {
                conf += "listener \(tlsPort) ::1\ncertfile \(tls.certificate)\nkeyfile \(tls.key)\n"
                listeners.append((address: "::1", port: tlsPort))
            }
        }
        self.listeners = listeners
        try conf.write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
    }

    deinit { stop() }

    /// Whether "localhost" resolves to an IPv6 address on this machine.
    static var localhostHasIPv6: Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo("localhost", nil, &hints, &list) == 0 else { return false }
        defer { freeaddrinfo(list) }
        var entry = list
        while let e = entry {
            if e.pointee.ai_family == AF_INET6 { return true }
            entry = e.pointee.ai_next
        }
        return false
    }

    public var url: String { "mqtt://127.0.0.1:\(port)" }
    /// The TLS listener as `mqtts://host:port`; `host` is the name the client checks the
    /// certificate against.
    public func tlsURL(host: String = "localhost") -> String { "mqtts://\(host):\(tlsPort!)" }
    public var log: String { (try? String(contentsOfFile: directory + "/mosquitto.log", encoding: .utf8)) ?? "" }

    /// Starts the broker and waits (≤ 10 s) until every listener accepts connections.
    /// Every one: mosquitto opens its listeners one after the other, a TLS one's certificate
    /// loaded after its socket listens (milliseconds), so 127.0.0.1's TLS port accepts
    /// before ::1's, and a client of "localhost" (::1 first on Debian 13) that came in
    /// between was refused (libmosquitto 2.0.21 reports that as "a tls error occurred").
    public func start() throws {
        precondition(process == nil, "already running")
        let p = try SpawnedChild(argv: [Self.executable!, "-c", directory + "/mosquitto.conf"])
        process = p
        _ = pollUntil(timeout: .seconds(10)) {
            !p.isRunning || listeners.allSatisfy { Self.accepts(address: $0.address, port: $0.port) }
        }
        let waiting = listeners.filter { !Self.accepts(address: $0.address, port: $0.port) }.map { "\($0.address) port \($0.port)" }
        if waiting.isEmpty { return }
        throw BrokerError("mosquitto did not start listening on \(waiting.joined(separator: ", ")):\n\(log)")
    }

    /// Stops the broker (SIGTERM: it closes every connection cleanly) and waits for it.
    public func stop() {
        guard let p = process else { return }
        process = nil
        p.signal(SIGTERM)
        p.waitForExit()
    }

    public var isRunning: Bool { process?.isRunning ?? false }

    /// `mosquitto_pub`: one message; returns when the broker has it (QoS 1).
    public func publish(_ topic: String, _ payload: String, retain: Bool = false) throws {
        let r = try Self.run(
            ["/usr/bin/mosquitto_pub", "-h", "127.0.0.1", "-p", String(port), "-q", "1", "-t", topic, "-m", payload]
                + (retain ? ["-r"] : []) + credentials)
        guard r.status == 0 else { throw BrokerError("mosquitto_pub: \(r.output)") }
    }

    /// The retained message of a topic (nil when none comes within a second).
    public func retained(_ topic: String) throws -> String? {
        let r = try Self.run(
            ["/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", String(port), "-t", topic, "-C", "1", "-W", "1"] + credentials)
        guard r.status == 0 else { return nil }
        return r.output.hasSuffix("\n") ? String(r.output.dropLast()) : r.output
    }

    /// The topics under `filter` (a subscription filter, `+` and `#` allowed) that hold a
    /// retained message now, sorted: what a client subscribing gets within a second.
    public func retainedTopics(_ filter: String) throws -> [String] {
        // `-W 1` ends the wait with status 27 (timed out): the topics printed before count;
        // the marked lines are the topics, not the "Timed out" on stderr (same pipe).
        let r = try Self.run(
            [
                "/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", String(port), "-t", filter, "--retained-only", "-W", "1", "-F",
                "retained %t",
            ]
                + credentials)
        guard r.status == 0 || r.status == 27 else { throw BrokerError("mosquitto_sub -t \(filter): \(r.output)") }
        return r.output.split(separator: "\n").filter { $0.hasPrefix("retained ") }.map { String($0.dropFirst(9)) }.sorted()
    }

    /// The retained message of a topic as bytes (nil when none comes within two seconds):
    /// `mosquitto_sub -F %x` prints the payload in hex, so binary payloads (a JPEG) come
    /// back whole.
    public func retainedBytes(_ topic: String) throws -> [UInt8]? {
        let r = try Self.run(
            ["/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", String(port), "-t", topic, "-C", "1", "-W", "2", "-F", "%x"]
                + credentials)
        guard r.status == 0 else { return nil }
        let hex = Array(r.output.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        for i in stride(from: 0, to: hex.count, by: 2) {
            guard let b = UInt8(String(decoding: hex[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(b)
        }
        return bytes
    }

    /// A `mosquitto_sub -v` on `topics` that runs until released.
    public func subscribe(_ topics: String...) throws -> Subscription {
        try Subscription(
            argv: ["/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", String(port), "-v", "-q", "1"]
                + topics.flatMap { ["-t", $0] } + credentials)
    }

    private var credentials: [String] {
        guard let (user, password) = users.sorted(by: { $0.key < $1.key }).first else { return [] }
        return ["-u", user, "-P", password]
    }

    /// Messages a `mosquitto_sub -v` printed: `topic payload` per line.
    public final class Subscription: Sendable {
        private let process: SpawnedChild

        init(argv: [String]) throws {
            process = try SpawnedChild(argv: argv, captureOutput: true)
            // mosquitto_sub prints nothing once subscribed: give it a moment to connect.
            usleep(300_000)
        }

        deinit {
            process.signal(SIGKILL)
            process.waitForExit()
        }

        /// Complete lines so far, as (topic, payload).
        public var messages: [(topic: String, payload: String)] {
            let text = process.output
            guard let end = text.lastIndex(of: "\n") else { return [] }
            return text[..<end].split(separator: "\n").map { line in
                let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            }
        }

        /// Waits (≤ `timeout`, ``pollUntil(timeout:every:_:)``) for a message that matches; returns it.
        @discardableResult
        public func waitFor(
            timeout: Duration = .seconds(15), _ matches: (String, String) -> Bool
        ) -> (topic: String, payload: String)? {
            var found: (topic: String, payload: String)?
            _ = pollUntil(timeout: timeout) {
                found = messages.first { matches($0.topic, $0.payload) }
                return found != nil
            }
            return found
        }
    }

    public struct BrokerError: Error, CustomStringConvertible {
        public var description: String
        init(_ d: String) { description = d }
    }

    /// Runs a program to its end; status and stdout+stderr.
    static func run(_ argv: [String]) throws -> (status: Int32, output: String) {
        let p = try SpawnedChild(argv: argv, captureOutput: true)
        let status = p.waitForExit()
        return (status, p.output)
    }

    /// A port nothing listens on now (the kernel's pick for an ephemeral bind).
    public static func freePort() throws -> Int { try TCPListener().port }

    /// Whether a TCP connect to `address` (an IPv4 or IPv6 literal) and `port` succeeds now.
    public static func accepts(address: String, port: Int) -> Bool {
        var v6 = sockaddr_in6()
        let isV6 = inet_pton(AF_INET6, address, &v6.sin6_addr) == 1
        let fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if isV6 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = UInt16(port).bigEndian
            return withUnsafePointer(to: &v6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
            }
        }
        var v4 = sockaddr_in()
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_addr.s_addr = inet_addr(address)
        v4.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &v4) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// A child (``TestChild``) whose stdout and stderr, when captured, are one stream read on a
/// thread of its own.
final class SpawnedChild: Sendable {
    let child: TestChild
    var pid: pid_t { child.pid }
    private let collector: DescriptorCollector?

    init(argv: [String], captureOutput: Bool = false) throws {
        child = try TestChild(argv, stdout: captureOutput ? .pipe : .null, stderr: captureOutput ? .stdout : .null)
        collector = child.stdout.map { DescriptorCollector(fd: $0, name: "child-output") }
    }

    var output: String { collector?.text ?? "" }

    func signal(_ s: Int32) { child.signal(s) }

    var isRunning: Bool { child.isRunning }

    /// Waits for the exit (and the end of its output); the exit status, 128 + signal when killed.
    @discardableResult
    func waitForExit() -> Int32 {
        let code = child.wait()
        while collector.map({ !$0.isFinished }) ?? false { usleep(5_000) }
        return code
    }
}

/// A TCP socket listening on a free 127.0.0.1 port, closed when released.
public final class TCPListener {
    public let fd: Int32
    public let port: Int

    public init() throws(SpawnError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SpawnError(what: "socket", errno: errno) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else {
            close(fd)
            throw SpawnError(what: "bind 127.0.0.1:0", errno: errno)
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    deinit { close(fd) }
}
