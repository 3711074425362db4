import EvcaptureTesting
import Foundation
@testable import LinuxIO
import Logging
import MQTT
import Synchronization
import Testing
import Vocabulary

/// The client against a real mosquitto on a free 127.0.0.1 port: connection, birth and will,
/// publishing, subscriptions, an absent broker, a restarted broker, bad credentials, the
/// bounded offline queue.
@Suite(
    .serialized,
    .enabled(if: MosquittoBroker.skipReason == nil, "needs mosquitto and mosquitto-clients (apt-get install mosquitto mosquitto-clients)"))
struct MQTTClientTests {
    /// A client on its own loop, with what it reported.
    final class Recorder: Sendable {
        let events = Mutex<[MQTTClient.Event]>([])
        let received = Mutex<[(String, String)]>([])
    }

    final class Harness: Sendable {
        let loop: IOLoop
        let client: MQTTClient
        let recorder = Recorder()

        init(_ settings: MQTTConnectionSettings, logger: Logger = testLogger) throws {
            loop = try IOLoop()
            let recorder = self.recorder
            client = try MQTTClient(
                settings: settings, loop: loop, logger: logger,
                onMessage: { topic, payload in
                    recorder.received.withLock { $0.append((topic, String(decoding: payload, as: UTF8.self))) }
                },
                onEvent: { e in recorder.events.withLock { $0.append(e) } })
        }

        func start() async throws { try await client.start() }

        func stop() async {
            await client.stop()
            loop.stop()
        }

        var connectedCount: Int { recorder.events.withLock { $0.filter { if case .connected = $0 { true } else { false } }.count } }

        func waitForConnections(_ n: Int, timeout: Duration = .seconds(20)) -> Bool {
            pollUntil(timeout: timeout) { self.connectedCount >= n }
        }
    }

    static func settings(_ broker: MQTTBroker, id: String = "test-station", queue: Int = 1000) -> MQTTConnectionSettings {
        MQTTConnectionSettings(
            broker: broker, clientID: id,
            birth: MQTTMessage(topic: "t/\(id)/status", text: "online", qos: .atLeastOnce, retain: true),
            will: MQTTMessage(topic: "t/\(id)/status", text: "offline", qos: .atLeastOnce, retain: true),
            subscriptions: [(topic: "t/\(id)/trigger", qos: .atLeastOnce)], offlineQueueLimit: queue,
            initialBackoff: .milliseconds(100), maximumBackoff: .milliseconds(400))
    }

    @Test func connectsPublishesSubscribesAndSaysOfflineWhenStopped() async throws {
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir)
        try broker.start()
        let watch = try broker.subscribe("t/#")
        let h = try Harness(Self.settings(try MQTTBroker(url: broker.url)))
        try await h.start()
        #expect(h.waitForConnections(1), "\(h.recorder.events.withLock { $0 })\n\(broker.log)")
        #expect(try broker.retained("t/test-station/status") == "online")

        for i in 1...3 { h.client.publish(MQTTMessage(topic: "t/test-station/event/capture", text: "{\"n\":\(i)}", qos: .atLeastOnce)) }
        #expect(watch.waitFor { t, p in t == "t/test-station/event/capture" && p == "{\"n\":3}" } != nil, "\(watch.messages)")
        #expect(watch.messages.filter { $0.topic.hasSuffix("/capture") }.map(\.payload) == ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"])

        // Subscribed on connect: a message on the trigger topic reaches onMessage.
        try broker.publish("t/test-station/trigger", "{\"command\":\"photo\"}")
        #expect(pollUntil(timeout: .seconds(10)) { h.recorder.received.withLock { !$0.isEmpty } })
        #expect(h.recorder.received.withLock { $0.map(\.0) } == ["t/test-station/trigger"])
        #expect(h.recorder.received.withLock { $0.map(\.1) } == ["{\"command\":\"photo\"}"])

        // A clean stop is no lost connection: the client says offline itself.
        await h.stop()
        #expect(watch.waitFor { t, p in t == "t/test-station/status" && p == "offline" } != nil, "\(watch.messages)")
        #expect(try broker.retained("t/test-station/status") == "offline")
    }

    @Test func aBrokerThatIsAwayAtStartIsConnectedToLaterWithTheQueuedMessages() async throws {
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir)
        let h = try Harness(Self.settings(try MQTTBroker(url: broker.url)))
        try await h.start()
        // Retained, each on its own topic: the test's subscriber cannot be on the broker
        // before the client is (it reconnects within 0.1–0.4 s), so it reads them afterwards.
        for i in 1...5 {
            h.client.publish(MQTTMessage(topic: "t/test-station/event/x/\(i)", text: "\(i)", qos: .atLeastOnce, retain: true))
        }
        // Refused connections: reported once, retried with backoff, nothing connects.
        #expect(pollUntil(timeout: .seconds(5)) { h.recorder.events.withLock { !$0.isEmpty } })
        let first = h.recorder.events.withLock { $0 }
        guard case .connectFailed(let reason, _)? = first.first else {
            Issue.record("expected a failed connection first, got \(first)")
            return
        }
        #expect(reason.contains("refused"), "\(reason)")
        try await Task.sleep(for: .milliseconds(1500))
        #expect(h.connectedCount == 0)
        // Reported once per outage, not once per attempt (≥ 4 attempts by now).
        #expect(h.recorder.events.withLock { $0.count } == 1, "\(h.recorder.events.withLock { $0 })")

        try broker.start()
        #expect(h.waitForConnections(1, timeout: .seconds(10)), "\(h.recorder.events.withLock { $0 })")
        for i in 1...5 {
            #expect(pollUntil(timeout: .seconds(10)) { (try? broker.retained("t/test-station/event/x/\(i)")) == "\(i)" }, "message \(i)")
        }
        #expect(try broker.retained("t/test-station/status") == "online")
        await h.stop()
    }

    @Test func aRestartedBrokerIsReconnectedAndResubscribed() async throws {
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir)
        try broker.start()
        let h = try Harness(Self.settings(try MQTTBroker(url: broker.url)))
        try await h.start()
        #expect(h.waitForConnections(1))
        broker.stop()
        #expect(
            pollUntil(timeout: .seconds(10)) {
                h.recorder.events.withLock { $0.contains { if case .disconnected = $0 { true } else { false } } }
            }, "\(h.recorder.events.withLock { $0 })")
        // Published during the outage: kept, sent after the reconnect.
        h.client.publish(MQTTMessage(topic: "t/test-station/event/x", text: "during", qos: .atLeastOnce, retain: true))
        try broker.start()
        #expect(h.waitForConnections(2, timeout: .seconds(15)), "\(h.recorder.events.withLock { $0 })\n\(broker.log)")
        #expect(pollUntil(timeout: .seconds(10)) { (try? broker.retained("t/test-station/event/x")) == "during" })
        // The new session has the subscription again.
        try broker.publish("t/test-station/trigger", "after-restart")
        #expect(pollUntil(timeout: .seconds(10)) { h.recorder.received.withLock { $0.contains { $0.1 == "after-restart" } } })
        #expect(try broker.retained("t/test-station/status") == "online")
        await h.stop()
    }

    /// Announcements (Home Assistant discovery) are retained on the broker after every
    /// connection: a broker restarted without persistence has them again.
    @Test func announcementsArePublishedOnEveryConnection() async throws {
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir)
        try broker.start()
        var settings = Self.settings(try MQTTBroker(url: broker.url))
        settings.announcements = [
            MQTTMessage(topic: "ha/button/n/photo/config", text: #"{"a":1}"#, qos: .atLeastOnce, retain: true),
            MQTTMessage(topic: "ha/binary_sensor/n/status/config", text: #"{"b":2}"#, qos: .atLeastOnce, retain: true),
        ]
        let h = try Harness(settings)
        try await h.start()
        #expect(h.waitForConnections(1), "\(h.recorder.events.withLock { $0 })\n\(broker.log)")
        #expect(pollUntil(timeout: .seconds(10)) { (try? broker.retained("ha/binary_sensor/n/status/config")) == #"{"b":2}"# })
        #expect(try broker.retained("ha/button/n/photo/config") == #"{"a":1}"#)
        broker.stop()
        try broker.start()
        #expect(h.waitForConnections(2, timeout: .seconds(15)), "\(h.recorder.events.withLock { $0 })\n\(broker.log)")
        #expect(pollUntil(timeout: .seconds(10)) { (try? broker.retained("ha/button/n/photo/config")) == #"{"a":1}"# })
        #expect(try broker.retained("ha/binary_sensor/n/status/config") == #"{"b":2}"#)
        await h.stop()
    }

    /// A broker and a connected client whose one announcement (a retained config at
    /// `ha/camera/<id>/photo/config`) its farewell takes back.
    static func announced(id: String) async throws -> (MosquittoBroker, Harness) {
        let broker = try MosquittoBroker(directory: try temporaryDirectory())
        try broker.start()
        let config = "ha/camera/\(id)/photo/config"
        var settings = Self.settings(try MQTTBroker(url: broker.url), id: id)
        settings.announcements = [MQTTMessage(topic: config, text: #"{"c":1}"#, qos: .atLeastOnce, retain: true)]
        settings.farewells = [MQTTMessage(topic: config, payload: [], qos: .atLeastOnce, retain: true)]
        let h = try Harness(settings)
        try await h.start()
        #expect(h.waitForConnections(1), "\(h.recorder.events.withLock { $0 })\n\(broker.log)")
        #expect(pollUntil(timeout: .seconds(10)) { (try? broker.retained(config)) == #"{"c":1}"# })
        return (broker, h)
    }

    /// Farewells go out on a clean stop, before the will: an empty retained message takes a
    /// retained announcement back off the broker (Home Assistant's entity removed).
    @Test func farewellsArePublishedOnACleanStop() async throws {
        let (broker, h) = try await Self.announced(id: "leaves")
        await h.stop()
        #expect(pollUntil(timeout: .seconds(10)) { (try? broker.retained("t/leaves/status")) == "offline" })
        #expect(try broker.retainedTopics("#") == ["t/leaves/status"], "\(broker.log)")
    }

    @Test func theBrokerPublishesTheWillWhenTheConnectionDies() async throws {
        // The will needs a connection that dies without DISCONNECT: a second broker-side
        // view is not enough, so the client's socket is cut by stopping the test's loop
        // thread without a clean stop — the broker sees the TCP connection close.
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir)
        try broker.start()
        let watch = try broker.subscribe("t/+/status")
        var h: Harness? = try Harness(Self.settings(try MQTTBroker(url: broker.url), id: "dies"))
        try await h!.start()
        #expect(h!.waitForConnections(1))
        #expect(watch.waitFor { t, p in t == "t/dies/status" && p == "online" } != nil)
        // A program started meanwhile as most code starts one (posix_spawn with no file
        // actions: every descriptor not close-on-exec goes with it) must not take the
        // broker connection along, or the broker sees it die only when that program ends.
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sleep", "60"].map { (s: String) in strdup(s) } + [nil]
        defer { argv.forEach { free($0) } }
        #expect(posix_spawn(&pid, "/bin/sleep", nil, nil, argv, environ) == 0)
        defer {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        h!.loop.stop()  // removes every registration: the watched socket duplicate is closed
        h = nil  // deinit: mosquitto_destroy closes libmosquitto's socket, no DISCONNECT sent
        #expect(watch.waitFor { t, p in t == "t/dies/status" && p == "offline" } != nil, "\(watch.messages)\n\(broker.log)")
    }

    @Test func wrongCredentialsAreAClearRefusalRetriedQuietly() async throws {
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir, users: ["rig": "right"])
        try broker.start()
        try "wrong\n".write(toFile: dir + "/password", atomically: true, encoding: .utf8)
        var settings = Self.settings(try MQTTBroker(url: broker.url))
        settings.username = "rig"
        settings.passwordFile = dir + "/password"
        let h = try Harness(settings)
        try await h.start()
        #expect(pollUntil(timeout: .seconds(10)) { h.recorder.events.withLock { !$0.isEmpty } })
        try await Task.sleep(for: .milliseconds(1000))
        let events = h.recorder.events.withLock { $0 }
        #expect(events.count == 1, "\(events)")
        guard case .connectFailed(let reason, _)? = events.first else {
            Issue.record("\(events)")
            return
        }
        #expect(reason.contains("refused by the broker") && reason.contains("not authori"), "\(reason)")
        #expect(!reason.contains("wrong"), "the password must never appear: \(reason)")
        await h.stop()

        // The right password connects.
        try "right\n".write(toFile: dir + "/password", atomically: true, encoding: .utf8)
        let ok = try Harness(settings)
        try await ok.start()
        #expect(ok.waitForConnections(1), "\(ok.recorder.events.withLock { $0 })")
        await ok.stop()
    }

    @Test func anUnreadablePasswordFileStopsTheClientBeforeItStarts() throws {
        var settings = Self.settings(MQTTBroker(host: "127.0.0.1", port: 1, tls: false))
        settings.username = "rig"
        settings.passwordFile = "/nonexistent/evcapture-password"
        let loop = try IOLoop()
        defer { loop.stop() }
        #expect(throws: MQTTClientError("cannot read the password file /nonexistent/evcapture-password: no such file or directory")) {
            _ = try MQTTClient(settings: settings, loop: loop, logger: testLogger, onMessage: { _, _ in }, onEvent: { _ in })
        }
    }

    @Test func theOfflineQueueKeepsTheNewestAndCountsTheDropped() async throws {
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir)
        let h = try Harness(Self.settings(try MQTTBroker(url: broker.url), queue: 3))
        try await h.start()
        for i in 1...7 {
            h.client.publish(MQTTMessage(topic: "t/test-station/event/x/\(i)", text: "\(i)", qos: .atLeastOnce, retain: true))
        }
        try broker.start()
        #expect(h.waitForConnections(1, timeout: .seconds(10)))
        #expect(h.recorder.events.withLock { $0.last } == .connected(dropped: 4))
        for i in 5...7 {
            #expect(pollUntil(timeout: .seconds(10)) { (try? broker.retained("t/test-station/event/x/\(i)")) == "\(i)" }, "message \(i)")
        }
        for i in 1...4 { #expect(try broker.retained("t/test-station/event/x/\(i)") == nil, "message \(i) was to be dropped") }
        await h.stop()
    }

    /// No busy loop: a connected, idle client leaves the loop's thread asleep (counted in
    /// its wake-ups, not in CPU time, which other tests running in parallel would add to).
    @Test func anIdleConnectedClientDoesNotSpin() async throws {
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir)
        try broker.start()
        let h = try Harness(Self.settings(try MQTTBroker(url: broker.url)))
        try await h.start()
        #expect(h.waitForConnections(1))
        // The connection's own exchange over first: the birth's PUBACK and the SUBACK read,
        // and a message on the subscribed topic come back through the loop.
        #expect(pollUntil(timeout: .seconds(10)) { (try? broker.retained("t/test-station/status")) == "online" })
        try broker.publish("t/test-station/trigger", "ping")
        #expect(pollUntil(timeout: .seconds(10)) { h.recorder.received.withLock { !$0.isEmpty } })
        try await Task.sleep(for: .milliseconds(200))
        let before = h.loop.wakeupCount
        try await Task.sleep(for: .seconds(2))
        let woke = h.loop.wakeupCount - before
        // Keepalive is 60 s: nothing is due in these 2 s; a spinning loop wakes thousands of times.
        #expect(woke <= 4, "the loop woke \(woke) times in 2 s idle")
        await h.stop()
    }
}

extension MQTTClient {
    /// Publishes from the loop thread and holds it until `arrived` (polled) or 5 s: a
    /// message sent only when the loop next waits would arrive after the hold.
    func publishHoldingTheLoop(_ message: MQTTMessage, until arrived: () -> Bool) -> Bool {
        publish(message)
        return pollUntil(timeout: .seconds(5)) { arrived() }
    }
}

extension MQTTClientTests {
    /// A station's own press is fanned out from the loop thread: the message leaves in that
    /// very wake-up, before the loop goes on to the press's other work.
    @Test func aMessagePublishedOnTheLoopLeavesBeforeTheLoopWaitsAgain() async throws {
        let dir = try temporaryDirectory()
        let broker = try MosquittoBroker(directory: dir)
        try broker.start()
        let watch = try broker.subscribe("t/#")
        let h = try Harness(Self.settings(try MQTTBroker(url: broker.url)))
        try await h.start()
        #expect(h.waitForConnections(1), "\(h.recorder.events.withLock { $0 })")
        let arrived = await h.client.publishHoldingTheLoop(MQTTMessage(topic: "t/test-station/all/trigger", text: "now", qos: .atLeastOnce))
        {
            watch.messages.contains { $0.topic == "t/test-station/all/trigger" && $0.payload == "now" }
        }
        #expect(arrived, "the message left only after the loop's wake-up: \(watch.messages)")
        await h.stop()
    }
}

extension MQTTClientTests {
    /// libmosquitto keeps at most 20 QoS 1 messages unacknowledged and holds the rest until
    /// acknowledgements come back: a clean stop with more queued (a burst of events, the
    /// farewells, the will) reads the acknowledgements, so every one is delivered
    /// (docs/mqtt.md#home-assistant: a clean stop removes the station's entities).
    @Test func aCleanStopDeliversMoreThanTheMessagesInFlight() async throws {
        let (broker, h) = try await Self.announced(id: "busy")
        let watch = try broker.subscribe("t/busy/event")
        // Published and stopped in one turn of the loop: no acknowledgement is read before the stop.
        await h.client.publishThenStop((0..<50).map { MQTTMessage(topic: "t/busy/event", text: "\($0)", qos: .atLeastOnce) })
        h.loop.stop()
        #expect(pollUntil(timeout: .seconds(10)) { watch.messages.count >= 50 }, "\(watch.messages.count) of 50 arrived\n\(broker.log)")
        #expect(watch.messages.map(\.payload) == (0..<50).map { "\($0)" })
        #expect(try broker.retained("t/busy/status") == "offline", "\(broker.log)")
        #expect(try broker.retainedTopics("#") == ["t/busy/status"], "\(broker.log)")
    }
}

extension MQTTClient {
    /// Publishes from the loop thread and stops in the same turn.
    func publishThenStop(_ messages: [MQTTMessage]) {
        for m in messages { publish(m) }
        stop()
    }
}
