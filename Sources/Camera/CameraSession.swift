import Vocabulary
import LinuxIO
import Logging
import Synchronization
import Udev
import V4L2

/// The camera side of the daemon: one V4L2 camera, its controls bound to the system sliders,
/// followed for changes made elsewhere, and carried across unplug and replug.
///
/// ``events`` reports what happens; `stopped` is what the capture pipeline consumes to cancel
/// presses in flight (reason: session stopped) and disable the camera-bound controls.
///
/// While the camera is away the session sleeps on a udev monitor of the `video4linux`
/// subsystem (created when the camera goes, enumerated right after, so a camera back in the
/// meantime is not missed) and tries a node only when udev announces one that may be the
/// same camera: no polling, no timer.
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
        /// Where the session hears of the camera's return: udevd's events, or the kernel's
        /// when udevd is not running (`.automatic`).
        public var hotplugSource: UdevEventSource
        /// Policy `restore`: at most `limit` restores of one control within `window`; past
        /// that the session gives way to the other program (keeps its value, reports it).
        public var restoreLimit: (limit: Int, window: Duration)

        public init(
            camera: CameraSelector = .automatic, onExternalChange: ExternalChangePolicy = .follow,
            hotplugSource: UdevEventSource = .automatic, restoreLimit: (limit: Int, window: Duration) = (3, .seconds(2))
        ) {
            self.camera = camera
            self.onExternalChange = onExternalChange
            self.hotplugSource = hotplugSource
            self.restoreLimit = restoreLimit
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
        /// Another program (or the driver) changed a control the session follows. The
        /// controls as read after it follow in a `refreshed` event.
        case controlChanged(ControlUpdate)
        /// Every control with its value, read on the camera's writer thread after a change
        /// made elsewhere, a restore or a replug (one read for a burst of them): what the
        /// controls follow. Reading there, a camera that stops answering (uvcvideo: 5 s per
        /// USB request) holds that thread, never the consumer's.
        case refreshed([CameraControlInfo])
        /// The person's value was set again: after a replug, or (policy `restore`) after
        /// another program changed it.
        case restored(control: String, id: CameraControlID, value: Int64)
        /// Something the session tried failed.
        case error(CameraError)
    }

    public let configuration: Configuration
    /// The camera the controls drive. Its sets are written on a thread of its own (see
    /// ``V4L2Camera``); a failed write comes back as an `.error` event.
    public let camera: V4L2Camera
    /// What happened, in order. One consumer. Holds at most ``eventBufferLimit`` events not
    /// yet taken; past that the oldest go: a flood is control changes made elsewhere, each of
    /// which the consumer answers by reading the camera's values anew, so the newest carry
    /// what the dropped ones said.
    public let events: AsyncStream<Event>
    static let eventBufferLimit = 256

    /// The events' stream, with its overflow rule (``events``).
    static func makeEventStream() -> (AsyncStream<Event>, AsyncStream<Event>.Continuation) {
        AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(eventBufferLimit))
    }
    private let continuation: AsyncStream<Event>.Continuation
    private let loop: IOLoop
    private let logger: Logger
    private struct State {
        var opened: OpenedCamera?
        var bindings: CameraBindings
        var running = false
        var reopenAttempts = 0
        /// Bus info and card of the camera when it was last open.
        var busAndCard: String?
        /// Restores of each control lately (policy `restore`).
        var restores: RestoreBudget
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
        (events, continuation) = Self.makeEventStream()
        state = Mutex(
            State(
                opened: opened, bindings: bindings, busAndCard: opened.busAndCard,
                restores: RestoreBudget(limit: configuration.restoreLimit.limit, window: configuration.restoreLimit.window)))
        camera.writeOffThread(
            onFailure: { [continuation, logger] error in
                logger.warning("cannot set a control", metadata: ["error": "\(error)"])
                continuation.yield(.error(error))
            },
            onRefresh: { [continuation] controls in continuation.yield(.refreshed(controls)) })
    }

    /// Which V4L2 controls the system sliders drive (refreshed at every (re)connection).
    public var bindings: CameraBindings { state.withLock { $0.bindings } }
    /// Whether the camera is present and followed.
    public var isRunning: Bool { state.withLock { $0.running } }
    /// How many times the session has opened a node to get its camera back. One per udev
    /// event that may be the camera: it stays put while nothing is plugged in.
    public var reopenAttempts: Int { state.withLock { $0.reopenAttempts } }

    /// Follows the camera until cancelled: control events, removal, reconnection.
    /// Finishes ``events`` with `stopped(.shutdown)` when it returns.
    public func run() async {
        defer {
            state.withLock { $0.running = false }
            continuation.yield(.stopped(.shutdown))
            continuation.finish()
        }
        var resumed = false
        var opened = state.withLock { s in
            defer { s.opened = nil }; return s.opened
        }
        while !Task.isCancelled {
            var onlyNewArrivals = false
            if let current = opened {
                let end = await follow(current, resumed: resumed)
                opened = nil
                if Task.isCancelled { break }
                resumed = true
                // The camera is still there but could not be followed: trying the same node
                // again at once would fail again, in a loop. Wait for it to come anew.
                onlyNewArrivals = end == .failedWhilePresent
            }
            switch await waitForReturn(onlyNewArrivals: onlyNewArrivals) {
            case .back(let camera): opened = camera
            case .ended: return
            }
        }
    }

    private enum FollowEnd { case removed, failedWhilePresent, cancelled }
    private enum Return { case back(OpenedCamera), ended }

    /// Sleeps until udev announces a node that turns out to be the camera (same identity),
    /// and returns it opened. `.ended` when the task is cancelled or the loop stopped.
    private func waitForReturn(onlyNewArrivals: Bool) async -> Return {
        let identity = camera.identity
        let busAndCard = state.withLock { $0.busAndCard }
        let monitor: UdevVideoMonitor
        let arrivals: AsyncStream<UdevVideoEvent>
        do {
            (monitor, arrivals) = try UdevVideoMonitor.start(on: loop, source: configuration.hotplugSource)
        } catch {
            logger.error(
                "cannot watch for the camera's return; it will not be followed again",
                metadata: ["camera.identity": "\(identity)", "error": "\(error)"])
            continuation.yield(
                .error(CameraError(code: .failed, device: identity, control: "*", context: "cannot watch udev: \(error)")))
            await Self.untilCancelled()
            return .ended
        }
        defer { monitor.stop() }
        logger.info(
            "waiting for the camera to come back",
            metadata: ["camera.identity": "\(identity)", "udev.source": "\(monitor.source)"])
        var enumerated = false
        for await event in arrivals {
            let device: UdevVideoDevice
            switch event {
            case .enumerated:
                enumerated = true
                continue
            case .removed:
                continue
            case .added(let d), .changed(let d):
                if onlyNewArrivals && !enumerated { continue }
                device = d
            }
            let node = VideoNode(device)
            guard CameraDiscovery.mayBe(node, identity: identity, busAndCard: busAndCard) else { continue }
            state.withLock { $0.reopenAttempts += 1 }
            do {
                if let opened = try CameraDiscovery.open(node, as: identity, busAndCard: busAndCard) {
                    return .back(opened)
                }
            } catch {
                // A node on its way out (listed by the enumeration just after the removal)
                // answers ENODEV; its successor will be announced.
                logger.info(
                    "a node udev announced is not usable (yet)",
                    metadata: ["device.path": "\(node.path)", "camera.identity": "\(identity)", "error": "\(error)"])
            }
        }
        return .ended
    }

    /// Returns when the current task is cancelled; no wakeups until then.
    private static func untilCancelled() async {
        let (never, keep) = AsyncStream.makeStream(of: Never.self)
        for await _ in never {}
        withExtendedLifetime(keep) {}
    }

    /// One connection: attach, re-apply, watch until the camera goes away or the task ends.
    private func follow(_ opened: OpenedCamera, resumed: Bool) async -> FollowEnd {
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
            let gone = error.code.isDeviceGone
            return gone ? .removed : .failedWhilePresent
        }
        state.withLock { s in
            s.bindings = bindings
            s.running = true
            s.busAndCard = opened.busAndCard
        }
        logger.info(
            "camera started",
            metadata: ["device.path": "\(opened.device.path)", "camera.identity": "\(opened.identity)", "resumed": "\(resumed)"])
        continuation.yield(.started(identity: opened.identity, device: opened.device.path, resumed: resumed))
        if resumed {
            reapply(nil)
            camera.requestRefresh()
        }

        for await notification in notifications {
            switch notification {
            case .control(let event): handle(event)
            case .removed: break
            }
        }
        // The stream ends on removal, or because this task was cancelled.
        state.withLock { $0.running = false }
        camera.detach()
        if Task.isCancelled { return .cancelled }
        logger.info("camera removed", metadata: ["device.path": "\(opened.device.path)"])
        continuation.yield(.stopped(.cameraRemoved))
        return .removed
    }

    private func handle(_ event: ControlEvent) {
        let policy = configuration.onExternalChange
        let mine = camera.personValue(of: event.id)
        var restore =
            policy == .restore && event.changes.contains(.value) && mine != nil && mine != event.value
            && !event.flags.contains(.inactive) && !event.flags.contains(.readOnly)
        // Another program that puts its own value back as we do would make the two set
        // the camera back and forth for ever: past the budget the session gives way.
        var gaveWay = false
        if restore, !state.withLock({ $0.restores.allow(event.id, at: monotonicNow()) }) {
            restore = false
            gaveWay = true
        }
        // A value that comes with a change of flags is uvcvideo telling the other controls
        // of a mode change (auto exposure → the exposure time's value as it was then),
        // possibly our own: it is not a value another program chose, and adopting it would
        // replace a newer one of the person's (the exposure time set just after the mode).
        let chosenElsewhere = !event.changes.contains(.flags)
        camera.apply(event, adoptValue: (policy == .follow && chosenElsewhere) || gaveWay)
        if gaveWay {
            let name = camera.description(of: event.id)?.name ?? event.id.description
            let error = CameraError(
                code: .busy, device: camera.identity, control: name,
                context: "another program keeps changing it (\(configuration.restoreLimit.limit) restores within "
                    + "\(configuration.restoreLimit.window)): keeping its value \(event.value) instead of restoring")
            logger.warning("\(error)")
            continuation.yield(.error(error))
        }
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
        camera.requestRefresh()
    }

    private func reapply(_ ids: Set<ControlID>?) {
        for (id, result) in camera.reapply(only: ids) {
            let name = camera.description(of: id)?.name ?? id.description
            switch result {
            case .success(let value):
                continuation.yield(.restored(control: name, id: id, value: value))
            case .failure(let error):
                logger.warning("cannot restore a control", metadata: ["v4l2.control": "\(name)", "error": "\(error)"])
                continuation.yield(.error(error))
            }
        }
    }
}

/// How often the session may put one control's value back (policy `restore`): at most
/// `limit` times within `window`. A program that resets a control once is answered; one
/// that keeps setting it (or restores its own value as we do) is given way to.
struct RestoreBudget {
    let limit: Int
    let window: Duration
    private var recent: [ControlID: [Timestamp]] = [:]

    init(limit: Int, window: Duration) {
        self.limit = limit
        self.window = window
    }

    /// Counts a restore of `id` at `now` if the budget allows it.
    mutating func allow(_ id: ControlID, at now: Timestamp) -> Bool {
        var times = recent[id, default: []].filter { now < $0 + window }
        defer { recent[id] = times }
        guard times.count < limit else { return false }
        times.append(now)
        return true
    }
}
