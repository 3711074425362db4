import Vocabulary
import LinuxIO
import MQTT
import Output
import Synchronization

/// The station's latest photo on `<prefix>/<station>/photo`, JPEG bytes, retained: the image
/// of Home Assistant's camera entity (docs/mqtt.md#home-assistant).
///
/// `consume` runs on an action's worker and only notes the photo's path; a thread of its own
/// reads the file and hands it to the client. Only the newest photo waits: a burst of ten
/// publishes its last, and while the broker is away nothing is queued but that one path,
/// published when the connection is back (``connected(_:)``) — never a photo per press held
/// in the client's offline queue.
final class LatestPhotoPublisher: EventSink {
    /// Photos larger than this are not published (an error line says so): a broker's
    /// default message limit is far above it, a phone's photo far below.
    static let maxBytes = 16 << 20

    private struct State {
        var client: MQTTClient?
        var topic = ""
        var connected = false
        /// The newest photo not yet published.
        var pending: String?
        /// The publishing thread is running (it takes `pending` until there is none).
        var busy = false

        /// Whether the caller should start the publishing thread: there is a photo to send,
        /// a connection to send it on, and no thread running already.
        mutating func takeWork() -> Bool {
            guard connected, client != nil, pending != nil, !busy else { return false }
            busy = true
            return true
        }
    }

    private let state = Mutex(State())
    private let lines: LineWriter

    init(lines: LineWriter) { self.lines = lines }

    /// Where photos go, once the rig's client exists.
    func attach(_ client: MQTTClient, topic: String) {
        state.withLock {
            $0.client = client
            $0.topic = topic
        }
    }

    /// The client connected (publish what waits) or lost its connection (hold the newest).
    func connected(_ up: Bool) {
        let start = state.withLock { s -> Bool in
            s.connected = up
            return s.takeWork()
        }
        if start { startPublishing() }
    }

    func consume(_ event: DaemonEvent) {
        let path: String
        switch event {
        case .outcome(.photoSaved(let photo, _), _): path = photo.path
        case .outcome(.burstSaved(let photos, _), _) where !photos.isEmpty: path = photos[photos.count - 1].path
        case .outcome(.timelapse(let report), _) where report.photo != nil: path = report.photo!.path
        default: return
        }
        let start = state.withLock { s -> Bool in
            s.pending = path
            return s.takeWork()
        }
        if start { startPublishing() }
    }

    private func startPublishing() {
        startThread(name: "evc-mqtt-photo") { [self] in
            while let (path, client, topic) = next() {
                do {
                    let bytes = try readFileBytes(path, limit: Self.maxBytes)
                    guard bytes.count <= Self.maxBytes else {
                        report("mqtt: the photo \(path) is over \(Self.maxBytes >> 20) MiB; not published on \(topic)")
                        continue
                    }
                    client.publish(MQTTMessage(topic: topic, payload: bytes, qos: .atLeastOnce, retain: true))
                } catch {
                    report("mqtt: cannot read the photo \(path) to publish on \(topic): \(error)")
                }
            }
        }
    }

    /// The next photo to publish, or nil (and the thread ends) when none waits or the
    /// broker is away.
    private func next() -> (String, MQTTClient, String)? {
        state.withLock { s in
            guard s.connected, let client = s.client, let path = s.pending else {
                s.busy = false
                return nil
            }
            s.pending = nil
            return (path, client, s.topic)
        }
    }

    private func report(_ message: String) {
        lines.emit(.error(ErrorReport(message, code: "mqtt-photo", time: monotonicNow())))
    }
}
