#if canImport(Glibc)
import Glibc
#endif
import Actions
import Vocabulary
import LinuxIO
import LiveView
import Logging
import MQTT
import Output
import RTSP
import Rig
import Synchronization

/// The station's link to its rig (`[mqtt]`): every JSON line out under
/// `<prefix>/<station>/event/…`, the station's own presses out as trigger messages
/// (fan-out), trigger messages in to the daemon's state, Home Assistant discovery on every
/// connection. Without `[mqtt]` there is none, and no network socket is ever opened.
final class RigLink: JSONLineSink {
    let settings: RigSettings
    let topics: RigTopics
    let client: MQTTClient
    /// Ids for trigger messages that came without one.
    private let counter = Atomic<UInt64>(0)

    /// `onTrigger` runs on the loop thread for every message on a trigger topic.
    /// `links`: the live view's addresses for Home Assistant's camera entity; `photos`: the
    /// latest photo's publisher (with discovery), told when the connection comes and goes.
    init(
        connection: MQTTConnectionSettings, rig: RigSettings, links: StationLinks? = nil, photos: LatestPhotoPublisher? = nil,
        loop: IOLoop, lines: LineWriter, logger: Logger,
        onTrigger: @escaping @Sendable (_ topic: String, _ payload: [UInt8]) -> Void
    ) throws(MQTTClientError) {
        settings = rig
        topics = RigTopics(rig)
        let broker = connection.broker
        var connection = connection
        // Home Assistant's discovery configs go out, retained, on every connection: a broker
        // restarted without persistence has lost them. A clean stop empties them: the
        // station's entities leave Home Assistant (docs/mqtt.md#home-assistant).
        let discovery = HomeAssistantDiscovery(rig, links: links)
        connection.announcements = discovery?.messages ?? []
        connection.farewells = discovery?.removals ?? []
        client = try MQTTClient(
            settings: connection, loop: loop, logger: logger, onMessage: onTrigger,
            onEvent: { event in
                // Failures are error lines (also published, once the broker is back);
                // a connection made is logged.
                let now = monotonicNow()
                if case .connected = event { photos?.connected(true) } else { photos?.connected(false) }
                switch event {
                case .connected(let dropped) where dropped > 0:
                    lines.emit(
                        .error(
                            ErrorReport(
                                "mqtt: \(dropped) message(s) dropped while \(broker) was away (offline queue full)",
                                code: "mqtt-queue-full",
                                time: now)))
                case .connected:
                    break
                case .connectFailed(let reason, let retry):
                    lines.emit(
                        .error(
                            ErrorReport(
                                "mqtt: cannot connect to \(broker): \(reason); retrying (next in \(retry))", code: "mqtt-connect", time: now
                            )))
                case .disconnected(let reason):
                    lines.emit(
                        .error(
                            ErrorReport("mqtt: connection to \(broker) lost: \(reason); reconnecting", code: "mqtt-disconnected", time: now)
                        ))
                }
            })
        photos?.attach(client, topic: topics.photo)
    }

    /// A JSON line, published on its event's topic.
    func send(_ line: String) {
        if let message = topics.message(forLine: line) { client.publish(message) }
    }

    /// The station's own press, to the rig (fan-out).
    func fanOut(_ messages: [TriggerMessage]) {
        guard let topic = topics.fanOutTopic else { return }
        for m in messages { client.publish(MQTTMessage(topic: topic, text: m.json, qos: .atLeastOnce)) }
    }

    /// Runs the trigger receive path's code once (a sample message parsed and accepted, its
    /// line formatted), so that the station's first real trigger does not pay for the first
    /// use of the JSON decoder and the formatting: measured in the rig benchmark, each
    /// station's first trigger took 52–78 ms under emulation against 4–14 ms for the rest
    /// (BENCHMARKS.md, "rig trigger"). Nothing is emitted or published. Returns the line it formatted
    /// (nil if the sample was refused: a bug, caught by `RigLinkTests`).
    @discardableResult
    func warmUp() -> String? {
        // No `from`: whatever the station's name, the sample is not taken for its own.
        let sample = TriggerMessage(command: .photo, trigger: "warm-up", time: 1_764_000_000)
        guard case .success(let (command, trigger)) = accept(topic: topics.ownTrigger, payload: Array(sample.json.utf8), now: 1_764_000_000)
        else { return nil }
        return JSONLines.outcome(
            .triggerReceived(command, trigger: trigger.triggerID ?? "", topic: topics.ownTrigger), time: monotonicNow())
    }

    /// What a trigger message asks of this station: nil for its own fan-out coming back (it
    /// acted on its press already); a refusal names the topic and the problem.
    func accept(topic: String, payload: [UInt8], now wallTime: Double) -> Result<(CaptureCommand, ActionTrigger), TriggerMessageError>? {
        let message: TriggerMessage
        do {
            message = try TriggerMessage.parse(payload)
        } catch {
            return .failure(TriggerMessageError("on \(topic) \(error.problem)"))
        }
        if message.from == settings.station { return nil }
        let id =
            message.trigger
            ?? "\(settings.station)-\(Int64((wallTime * 1000).rounded()))-m\(counter.add(1, ordering: .relaxed).newValue)"
        let trigger = ActionTrigger(
            kind: message.command == .photo ? .click : .longPress, action: nil, button: "", deviceName: "mqtt",
            deviceNode: topic, press: .remote, time: monotonicNow(), triggerID: id,
            rigMoment: message.time.map(Timestamp.init(wallSeconds:)))
        return .success((message.command, trigger))
    }
}

extension StationLinks {
    /// The live view's addresses as another machine on the LAN would use them: the listen
    /// address, or this machine's host name when the server listens on every address
    /// (`0.0.0.0`, `::`); `https` with TLS.
    init(_ http: LiveViewSettings, rtsp: RTSPSettings? = nil, hostName: String = StationLinks.hostName()) {
        let base = "\(http.tls == nil ? "http" : "https")://\(http.listen.urlHost(hostName: hostName)):\(http.listen.port)"
        self.init(page: base + "/", mjpeg: base + "/stream.mjpg", rtsp: rtsp?.url(hostName: hostName))
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The station's own presses fanned out to its rig (`[mqtt]` with `fan-out`): each capture
/// event's decision (``FanOutPolicy``), its messages published at once, the other stations
/// first (they have the broker's hop to make), and the decision handed to the station's own
/// actions (``ActionsStage``), whose triggers carry its trigger id.
final class RigFanOut {
    let link: RigLink
    private var policy: FanOutPolicy

    init(_ link: RigLink) {
        self.link = link
        // Made only for a rig whose `fan-out` is not "none" (``DaemonState/attach(_:)``).
        policy = FanOutPolicy(station: link.settings.station, sendsTriggers: true)
    }

    func decide(_ capture: CaptureEvent) -> FanOutPolicy.Decision {
        // The press's kernel time on the wall clock, for the rig's stations.
        let decision = policy.handle(capture, wallTime: capture.time.wallSeconds)
        link.fanOut(decision.messages)
        return decision
    }
}
