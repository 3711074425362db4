import CMosquitto
import EvcaptureTesting
import Foundation
@testable import LinuxIO
import Logging
@testable import MQTT
import Synchronization
import Testing
import Vocabulary

/// `mqtts://` against a real mosquitto with a TLS listener, its certificates made by
/// `openssl` for each test: the right CA connects; a certificate from another CA or for
/// another host name is refused (verification is on by default) with the reason; the
/// password from `password-file` never appears in a log line or an event.
@Suite(
    .serialized,
    .enabled(if: MosquittoBroker.skipReason == nil, "needs mosquitto and mosquitto-clients (apt-get install mosquitto mosquitto-clients)"),
    .enabled(if: TestCertificates.skipReason == nil, "needs openssl (apt-get install openssl)"))
struct MQTTTLSTests {
    /// Every log record the client writes, message and metadata as text.
    final class LogRecords: Sendable {
        let lines = Mutex<[String]>([])
        var all: String { lines.withLock { $0.joined(separator: "\n") } }
    }

    struct RecordingLogHandler: LogHandler {
        let records: LogRecords
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            records.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
        }
    }

    /// A broker with a TLS listener whose certificate is `server`, a password for "rig",
    /// and client settings for it over TLS with `caFile`.
    struct Setup {
        let broker: MosquittoBroker
        let settings: MQTTConnectionSettings
        let password: String
    }

    static func setup(
        _ dir: String, serverCA: TestCertificates, serverNames: [String], clientCA: String, host: String = "localhost"
    ) throws -> Setup {
        let server = try serverCA.server("server", names: serverNames)
        // Unlike anything else in the test: any appearance of it in a log line is a leak.
        let password = "pw-\(UUID().uuidString)"
        let broker = try MosquittoBroker(directory: dir, users: ["rig": password], tls: server)
        try "\(password)\n".write(toFile: dir + "/password", atomically: true, encoding: .utf8)
        var settings = MQTTClientTests.settings(try MQTTBroker(url: broker.tlsURL(host: host)))
        settings.username = "rig"
        settings.passwordFile = dir + "/password"
        settings.caFile = clientCA
        return Setup(broker: broker, settings: settings, password: password)
    }

    static func harness(_ settings: MQTTConnectionSettings, _ records: LogRecords) throws -> MQTTClientTests.Harness {
        try MQTTClientTests.Harness(settings, logger: Logger(label: "tls-test") { _ in RecordingLogHandler(records: records) })
    }

    @Test func theRightCAConnectsPublishesAndReceivesAndThePasswordIsNeverLogged() async throws {
        let dir = try temporaryDirectory()
        let ca = try TestCertificates(directory: dir, name: "rig")
        let s = try Self.setup(dir, serverCA: ca, serverNames: ["localhost", "127.0.0.1"], clientCA: ca.caFile)
        try s.broker.start()
        let watch = try s.broker.subscribe("t/#")  // on the plain listener: the other end
        let records = LogRecords()
        let h = try Self.harness(s.settings, records)
        try await h.start()
        #expect(h.waitForConnections(1), "\(h.recorder.events.withLock { $0 })\n\(s.broker.log)")
        // The broker saw a TLS connection from the station.
        #expect(s.broker.log.contains("test-station"), "\(s.broker.log)")
        h.client.publish(MQTTMessage(topic: "t/test-station/event/capture", text: "over-tls", qos: .atLeastOnce))
        #expect(watch.waitFor { t, p in t == "t/test-station/event/capture" && p == "over-tls" } != nil, "\(watch.messages)")
        try s.broker.publish("t/test-station/trigger", "to-the-station")
        #expect(pollUntil(timeout: .seconds(10)) { h.recorder.received.withLock { $0.contains { $0.1 == "to-the-station" } } })
        await h.stop()
        #expect(watch.waitFor { t, p in t == "t/test-station/status" && p == "offline" } != nil)

        // The connection was logged (so the check below reads real log lines) without the password.
        #expect(records.all.contains("MQTT connected"), "\(records.all)")
        #expect(!records.all.contains(s.password), "the password is in the log:\n\(records.all)")
        #expect(!"\(h.recorder.events.withLock { $0 })".contains(s.password))
    }

    @Test func aCertificateFromAnotherCAIsRefusedWithTheReason() async throws {
        let dir = try temporaryDirectory()
        let ours = try TestCertificates(directory: dir, name: "rig")
        let theirs = try TestCertificates(directory: dir, name: "other")
        let s = try Self.setup(dir, serverCA: theirs, serverNames: ["localhost", "127.0.0.1"], clientCA: ours.caFile)
        let (h, records, reason) = try await Self.refused(s)
        #expect(
            reason
                == "TLS handshake failed: certificate verify failed (the broker's certificate is checked against the CA file \(ours.caFile) and the host name localhost)"
        )
        // Retried with backoff (0.1 s doubling to 0.4 s: several attempts by now), reported
        // once, never connected.
        try await Task.sleep(for: .milliseconds(1500))
        #expect(h.connectedCount == 0)
        #expect(h.recorder.events.withLock { $0.count } == 1, "\(h.recorder.events.withLock { $0 })")
        await h.stop()
        #expect(!records.all.contains(s.password), "the password is in the log:\n\(records.all)")
        #expect(!reason.contains(s.password))
    }

    @Test func aCertificateForAnotherHostNameIsRefusedWithTheReason() async throws {
        let dir = try temporaryDirectory()
        let ca = try TestCertificates(directory: dir, name: "rig")
        // Signed by the right CA, but for another host: the station connects to "localhost".
        let s = try Self.setup(dir, serverCA: ca, serverNames: ["broker.elsewhere.example"], clientCA: ca.caFile)
        let (h, records, reason) = try await Self.refused(s)
        #expect(
            reason
                == "TLS handshake failed: certificate verify failed (the broker's certificate is checked against the CA file \(ca.caFile) and the host name localhost)"
        )
        try await Task.sleep(for: .milliseconds(1000))
        #expect(h.connectedCount == 0)
        await h.stop()
        #expect(!records.all.contains(s.password))
    }

    /// Without a CA file the broker's certificate is checked against the system's CA store,
    /// where the throw-away CA is not: every attempt, not only the first, fails on that
    /// check and is retried (docs/mqtt.md#connection). libmosquitto 2.0.11 (Debian 12)
    /// refuses its second TLS connect with the system's store as "invalid function
    /// arguments" unless the client keeps the first attempt's TLS context.
    @Test func withTheSystemsCAStoreEveryAttemptFailsOnVerification() async throws {
        let dir = try temporaryDirectory()
        let ca = try TestCertificates(directory: dir, name: "rig")
        let withCA = try Self.setup(dir, serverCA: ca, serverNames: ["localhost", "127.0.0.1"], clientCA: ca.caFile)
        var settings = withCA.settings
        settings.caFile = nil
        let s = Setup(broker: withCA.broker, settings: settings, password: withCA.password)
        let (h, _, reason) = try await Self.refused(s)
        #expect(
            reason
                == "TLS handshake failed: certificate verify failed (the broker's certificate is checked against the system's CA store and the host name localhost)"
        )
        // Backoff 0.1 s doubling to 0.4 s: several more attempts by now, each failing the
        // same way (a new reason would be a second event) after reaching the broker.
        var attempts = 0
        _ = pollUntil(timeout: .seconds(20)) {
            attempts = s.broker.log.components(separatedBy: "New connection from").count - 1
            return attempts >= 3
        }
        #expect(attempts >= 3, "\(s.broker.log)")
        let events = h.recorder.events.withLock { $0 }
        #expect(events.count == 1, "\(events)")
        #expect(h.connectedCount == 0)
        await h.stop()
    }

    @Test func aCAFileThatCannotBeReadStopsTheClientBeforeItStarts() throws {
        var settings = MQTTClientTests.settings(MQTTBroker(host: "localhost", port: 8883, tls: true))
        settings.caFile = "/nonexistent/evcapture-ca.pem"
        let loop = try IOLoop()
        defer { loop.stop() }
        #expect(throws: MQTTClientError("cannot read the CA file /nonexistent/evcapture-ca.pem: no such file or directory")) {
            _ = try MQTTClient(settings: settings, loop: loop, logger: testLogger, onMessage: { _, _ in }, onEvent: { _ in })
        }
    }

    /// The broker of `s` started and a station connecting to it, which must be refused: the
    /// station's harness, its log and the reason of its first failed connection (≤ 10 s).
    static func refused(_ s: Setup) async throws -> (MQTTClientTests.Harness, LogRecords, String) {
        try s.broker.start()
        let records = LogRecords()
        let h = try harness(s.settings, records)
        try await h.start()
        let first =
            pollUntil(timeout: .seconds(10), { h.recorder.events.withLock { !$0.isEmpty } })
            ? h.recorder.events.withLock({ $0.first }) : nil
        var reason: String?
        if case .connectFailed(let r, _)? = first { reason = r }
        return (h, records, try #require(reason, "\(h.recorder.events.withLock { $0 })"))
    }
}

extension MQTTTLSTests {
    /// A broker that is down (nothing listens on its port, the connect is refused): the
    /// failure is reported at once and says so, for `mqtt://` and `mqtts://` alike, and the
    /// loop sleeps between attempts instead of watching a dead socket until the connect
    /// timeout (docs/mqtt.md#connection). A refused socket stays in error/hang-up: watched
    /// for readiness it wakes the loop on every turn.
    /// `mqtts://` with a CA file and with the system's CA store (whose later attempts
    /// libmosquitto 2.0.11 once refused as "invalid function arguments": a second event).
    @Test(arguments: [("mqtt", false), ("mqtts", true), ("mqtts", false)])
    func aRefusedConnectionIsReportedAtOnceAndTheLoopSleepsBetweenAttempts(scheme: String, withCAFile: Bool) async throws {
        let port = try MosquittoBroker.freePort()
        var settings = MQTTClientTests.settings(try MQTTBroker(url: "\(scheme)://127.0.0.1:\(port)"))
        if withCAFile {
            settings.caFile = try TestCertificates(directory: try temporaryDirectory(), name: "rig").caFile
        }
        // One attempt every 0.5 s: in 3 s about six, each a few wake-ups (timer, the
        // connection step's end, the socket's error).
        settings.initialBackoff = .milliseconds(500)
        settings.maximumBackoff = .milliseconds(500)
        let h = try MQTTClientTests.Harness(settings)
        let before = h.loop.wakeupCount
        let started = ContinuousClock.now
        try await h.start()
        // The connect timeout is 10 s: a failure seen only through it comes after it, one
        // reported at once within half of it (the tests run in parallel: 2.5 s seen).
        _ = pollUntil(timeout: .seconds(5)) { h.recorder.events.withLock { !$0.isEmpty } }
        let reported = ContinuousClock.now - started
        try await Task.sleep(until: started + .seconds(3))
        let woke = h.loop.wakeupCount - before
        #expect(woke <= 60, "the loop woke \(woke) times in 3 s")
        let events = h.recorder.events.withLock { $0 }
        if case .connectFailed(let reason, _)? = events.first {
            // libmosquitto 2.0.21 (Debian 13) returns a refusal that comes within its connect
            // call (this host's) as "a TLS error occurred" with errno EPROTO: the reason is lost.
            var version: (Int32, Int32, Int32) = (0, 0, 0)
            let number = mosquitto_lib_version(&version.0, &version.1, &version.2)
            let known = scheme == "mqtt" || number < 2_000_021
            #expect(reason == "connection refused" || (!known && reason == "a tls error occurred."), "\(reason)")
            #expect(reported < .seconds(5), "reported after \(reported)")
        } else {
            Issue.record("expected a failed connection first, got \(events)")
        }
        // Reported once per outage, not once per attempt.
        #expect(events.count == 1, "\(events)")
        await h.stop()
    }
}
