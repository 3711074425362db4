import Capture
import IOLoop
import Logging
import Synchronization
import V4L2

/// The camera side of the daemon: one V4L2 camera, its controls bound to the system sliders,
/// followed for changes made elsewhere, and carried across unplug and replug.
///
/// ``events`` reports what happens; `stopped` is what the capture pipeline consumes to cancel
/// presses in flight (reason: session stopped) and disable the camera-bound controls.
/// Sets go through ``camera`` (the ``Capture/CameraBackend`` the controls drive).
public final class CameraSession: Sendable {
    /// What to do when another program changes a value the person set.
    public enum ExternalChangePolicy: String, Sendable, Hashable {
        /// Take the new value (the slider follows it).
        case follow
        /// Put the person's value back.
        case restore
    }

    public struct Configuration: Sendable {
        public var camera: CameraSelector
        public var onExternalChange: ExternalChangePolicy
        /// How often to look for the camera while it is gone.
        public var reconnectInterval: Duration

        public init(
            camera: CameraSelector = .automatic, onExternalChange: ExternalChangePolicy = .follow,
            reconnectInterval: Duration = .milliseconds(250)
        ) {
            self.camera = camera
            self.onExternalChange = onExternalChange
            self.reconnectInterval = reconnectInterval
        }
    }

    /// Why the session stopped.
    public enum StopReason: Hashable, Sendable, CustomStringConvertible {
        /// The camera went away (unplugged, driver unbound).
        case cameraRemoved
        /// ``run()`` was cancelled.
        case shutdown
        public var description: String {
            switch self {
            case .cameraRemoved: "camera removed"
            case .shutdown: "shutdown"
            }
        }
    }

    /// A control's state after a change the session saw.
    public struct ControlUpdate: Hashable, Sendable {
        public var control: CameraControlInfo
        /// What changed: value, flags (inactive, read-only, ...) or range.
        public var changes: ControlChanges
    }

    public enum Event: Hashable, Sendable {
        /// The camera is in use: at start, and again after a replug (`resumed`).
        case started(identity: String, device: String, resumed: Bool)
        /// The camera went away or the session ended: controls are disabled, presses in
        /// flight are cancelled with reason "session stopped".
        case stopped(StopReason)
        /// Another program (or the driver) changed a control the session follows.
        case controlChanged(ControlUpdate)
        /// The person's value was set again: after a replug, or (policy `restore`) after
        /// another program changed it.
        case restored(control: String, id: CameraControlID, value: Int64)
        /// Something the session tried failed.
        case error(CameraError)
    }

    public let configuration: Configuration
    /// The camera the controls drive.
    public let camera: V4L2Camera
    /// What happened, in order. One consumer.
    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let loop: IOLoop
    private let logger: Logger
    private struct State {
        var opened: OpenedCamera?
        var bindings: CameraBindings
        var running = false
    }
    private let state: Mutex<State>

    /// Opens the camera the configuration names. Throws when there is none (a daemon
    /// without a camera still runs its capture events; it decides).
    public init(_ configuration: Configuration, loop: IOLoop, logger: Logger) throws(CameraDiscoveryError) {
        let opened = try CameraDiscovery.open(configuration.camera)
        let bindings = CameraBindings(controls: opened.controls)
        let camera = V4L2Camera(identity: opened.identity)
        do {
            // Usable at once, before run(): the controls may set values straight away.
            try camera.attach(opened, follow: bindings.boundControls)
        } catch {
            throw CameraDiscoveryError(
                reason: "cannot follow camera \(opened.device.path): \(error)", rejected: [], underlying: error)
        }
        self.configuration = configuration
        self.loop = loop
        self.logger = logger
        self.camera = camera
        (events, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        state = Mutex(State(opened: opened, bindings: bindings))
    }

    /// Which V4L2 controls the system sliders drive (refreshed at every (re)connection).
    public var bindings: CameraBindings { state.withLock { $0.bindings } }
    /// Whether the camera is present and followed.
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Follows the camera until cancelled: control events, removal, reconnection.
    /// Finishes ``events`` with `stopped(.shutdown)` when it returns.
    public func run() async {
        defer {
            state.withLock { $0.running = false }
            continuation.yield(.stopped(.shutdown))
            continuation.finish()
        }
        var resumed = false
        var opened = state.withLock { s in defer { s.opened = nil }; return s.opened }
        while !Task.isCancelled {
            if let current = opened {
                await follow(current, resumed: resumed)
                opened = nil
                if Task.isCancelled { break }
                resumed = true
            }
            // Gone: look for it again (udev would tell us; the scan works without it).
            do { try await Task.sleep(for: configuration.reconnectInterval) } catch { break }
            opened = CameraDiscovery.reopen(identity: camera.identity)
        }
    }

    /// One connection: attach, re-apply, watch until the camera goes away or the task ends.
    private func follow(_ opened: OpenedCamera, resumed: Bool) async {
        let bindings = CameraBindings(controls: opened.controls)
        let notifications: AsyncStream<DeviceNotification>
        do {
            if resumed { try camera.attach(opened, follow: bindings.boundControls) }
            notifications = try opened.device.notifications(on: loop)
        } catch {
            logger.warning(
                "cannot follow the camera", metadata: ["device.path": "\(opened.device.path)", "error": "\(error)"])
            camera.detach()
            continuation.yield(.error(cameraError(error, control: error.control ?? "*")))
            return
        }
        state.withLock { s in
            s.bindings = bindings
            s.running = true
        }
        logger.info(
            "camera started",
            metadata: ["device.path": "\(opened.device.path)", "camera.identity": "\(opened.identity)", "resumed": "\(resumed)"])
        continuation.yield(.started(identity: opened.identity, device: opened.device.path, resumed: resumed))
        if resumed { reapply(nil) }

        for await notification in notifications {
            switch notification {
            case .control(let event): handle(event)
            case .removed: break
            }
        }
        // The stream ends on removal, or because this task was cancelled.
        state.withLock { $0.running = false }
        camera.detach()
        if !Task.isCancelled {
            logger.info("camera removed", metadata: ["device.path": "\(opened.device.path)"])
            continuation.yield(.stopped(.cameraRemoved))
        }
    }

    private func handle(_ event: ControlEvent) {
        let policy = configuration.onExternalChange
        let mine = camera.personValue(of: event.id)
        let restore =
            policy == .restore && event.changes.contains(.value) && mine != nil && mine != event.value
            && !event.flags.contains(.inactive) && !event.flags.contains(.readOnly)
        camera.apply(event, adoptValue: policy == .follow)
        if let d = camera.description(of: event.id) {
            var info = CameraControlInfo(d, value: event.value)
            info.isInactive = event.flags.contains(.inactive)
            info.isReadOnly = event.flags.contains(.readOnly)
            logger.debug(
                "control changed elsewhere",
                metadata: ["v4l2.control": "\(d.name)", "v4l2.value": "\(event.value)"])
            continuation.yield(.controlChanged(ControlUpdate(control: info, changes: event.changes)))
        }
        if restore { reapply([event.id]) }
    }

    private func reapply(_ ids: Set<ControlID>?) {
        for (id, result) in camera.reapply(only: ids) {
            let name = camera.description(of: id)?.name ?? id.description
            switch result {
            case .success(let value):
                continuation.yield(.restored(control: name, id: CameraControlID(id.rawValue), value: value))
            case .failure(let error):
                logger.warning("cannot restore a control", metadata: ["v4l2.control": "\(name)", "error": "\(error)"])
                continuation.yield(.error(error))
            }
        }
    }
}
