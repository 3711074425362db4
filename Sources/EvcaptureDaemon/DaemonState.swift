#if canImport(Glibc)
import Glibc
#endif
import Capture
import Evdev
import Vocabulary
import FoundationEssentials
import LinuxIO
import Logging
import ServiceLifecycle
import Synchronization
import Udev
import Camera
import Actions
import Output
import ConfigFile
import Rig
import Frames

/// The daemon's state. Its executor is the ``IOLoop``: device reads enter it synchronously
/// on the I/O thread (`assumeIsolated`), so the input path has no thread hop; hotplug and
/// camera events `await` their turn on the same thread, in order.
actor DaemonState {
    nonisolated let unownedExecutor: UnownedSerialExecutor

    struct OpenDevice {
        var index: Int
        var device: EvdevDevice
        var profile: DeviceProfile
    }
    var pipeline: Pipeline
    /// The I/O thread every device is read on.
    let loop: IOLoop
    /// Every sink: the outputs, an app's observer, the lines (docs/architecture.md#events-and-sinks).
    let events: EventFanOut
    /// What capture events, session changes and the digital zoom mean to the actions; it
    /// holds the runner in use.
    let actionsStage: ActionsStage
    /// The features' parts of the input path, in order, before the sinks (``InputStage``).
    let stages: [any InputStage]
    let cameras: CameraSetup
    let logger: Logger
    let onReady: @Sendable () -> Void
    var devices: [String: OpenDevice] = [:]
    /// Fires the pipeline's next deadline; `armed` is what it is armed for.
    var timer: IOTimer?
    var armed: Timestamp?
    /// The camera session's events, and the wait for a camera when there is none.
    var cameraTask: Task<Void, Never>?
    var cameraWatch: Task<Void, Never>?
    /// Follows a separate capture device's return (its stream restarts).
    var captureWatch: Task<Void, Never>?
    /// The controls bound to the camera, when there is one (also held by the pipeline).
    var controlsStage: CameraControlsStage?
    /// The rig (`[mqtt]`), when configured: its trigger messages come in here.
    var rig: RigLink?
    /// The live view's virtual device in the pipeline, once it was used (``accept(_:)``).
    var liveViewDevice: Int?
    /// The capture stream for the live view, read from its thread (it changes with `actions`).
    nonisolated let liveFrames: Mutex<FrameSource?>

    init(
        settings: CaptureCoreSettings, session: SessionPolicy, controls: CameraControlsStage?, loop: IOLoop, events: EventFanOut,
        actions: ActionRunner, cameras: CameraSetup, logger: Logger, onReady: @escaping @Sendable () -> Void
    ) {
        unownedExecutor = loop.asUnownedSerialExecutor()
        pipeline = Pipeline(settings: settings, controls: controls, session: session)
        controlsStage = controls
        self.loop = loop
        self.events = events
        actionsStage = ActionsStage(runner: actions)
        stages = (cameras.libcamera.map { [AutofocusAtPress($0)] } ?? []) + [actionsStage]
        liveFrames = Mutex(actions.frames)
        self.cameras = cameras
        self.logger = logger
        self.onReady = onReady
    }

    /// Starts the session (it runs while the camera does, or always without a camera) and
    /// follows the camera, or waits for one.
    func start(camera session: CameraSession?) throws {
        timer = try IOTimer(loop: loop) { [weak self] in
            self?.assumeIsolated { state in
                state.armed = nil  // one-shot: it fired
                state.tick()
                state.scheduleDeadline()
            }
        }
        startSession(at: monotonicNow(), camera: session?.camera.identity)
        if let session {
            cameraTask = follow(session)
        } else if cameras.config.daemon.camera != nil {
            cameraWatch = cameras.waitForCamera { [weak self] session in await self?.cameraFound(session) }
        }
        captureWatch = cameras.watchCaptureDevice { [weak self] in await self?.captureDeviceAdded() }
        scheduleDeadline()
    }

    private func follow(_ session: CameraSession) -> Task<Void, Never> {
        Task { [weak self] in
            async let following: Void = session.run()
            for await event in session.events { await self?.handle(event) }
            await following
        }
    }

    /// The action runner in use.
    var actions: ActionRunner { actionsStage.runner }

    /// Joins the rig: its trigger messages come in here, and with a fan-out this station's
    /// presses go out to it before its own actions take them.
    func attach(_ rig: RigLink) {
        self.rig = rig
        if rig.settings.fanOut != .none { actionsStage.rig = RigFanOut(rig) }
    }

    /// Each event through the features' stages, then the state's own: dedicated devices are
    /// grabbed only while the session runs (whoever started or stopped it: the daemon, a
    /// launch press, the idle stop); then to every sink.
    func emit(_ event: PipelineEvent) {
        for stage in stages { stage.handle(event) }
        if case .session(let change) = event {
            switch change.state {
            case .started: for d in devices.values where d.profile.isDedicated { d.device.grabWhenIdle() }
            case .stopped, .paused: for d in devices.values { d.device.releaseGrab() }
            case .cameraAdded: break
            }
        }
        events.emit(event)
    }

    /// A message on one of the rig's trigger topics (on the loop thread): a photo or a
    /// video start/stop for the actions; a bad message is an `error` line and changes nothing.
    func acceptTrigger(topic: String, payload: [UInt8]) {
        guard let rig else { return }
        switch rig.accept(topic: topic, payload: payload, now: wallClockNow()) {
        case nil:
            return
        case .failure(let error):
            emit(.error(ErrorReport("mqtt: \(error)", code: "bad-trigger", time: monotonicNow())))
        case .success(let (command, trigger)):
            events.emit(.triggerReceived(command, trigger: trigger.triggerID ?? "", topic: topic), at: monotonicNow())
            actions.perform(command, for: trigger)
        }
    }

    /// Starts the session, unless it is launched by a button (``SessionPolicy/Mode/launch``).
    func startSession(at now: Timestamp, camera: String? = nil, cameraNode: String? = nil) {
        guard pipeline.session.mode == .always else { return }
        pipeline.sessionStarted(at: now, camera: camera, cameraNode: cameraNode) { emit($0) }
    }

    func stopSession(at now: Timestamp, reason: String) {
        pipeline.sessionStopped(at: now, reason: reason) { emit($0) }
    }

    func handle(_ event: DeviceWatcher.Event) {
        defer { scheduleDeadline() }
        let now = monotonicNow()
        switch event {
        case .added(let profile, let device):
            guard devices[profile.node] == nil else { return }
            // Before its `device` line: whoever reads that line may press at once.
            listen(to: device, profile)
            let index = pipeline.addDevice(profile, keysDown: Array(device.keysDown), at: now) { emit($0) }
            let node = profile.node
            do {
                // On the I/O thread, in the read's own wake-up: frames go straight
                // through the pipeline.
                try device.read(on: loop) { [weak self] input in
                    self?.assumeIsolated { state in
                        state.handle(input, from: node)
                        state.scheduleDeadline()
                    }
                }
            } catch {
                logger.warning("cannot read \(profile.node): \(error)")
                pipeline.removeDevice(index, at: now) { emit($0) }
                return
            }
            devices[profile.node] = OpenDevice(index: index, device: device, profile: profile)
            if pipeline.isRunning && profile.isDedicated { device.grabWhenIdle() }
        case .changed(let profile):
            // New roles (a rule or `udevadm trigger`): the device is re-added with them.
            guard let old = devices[profile.node] else { return }
            listen(to: old.device, profile)  // before its `device` line, as above
            pipeline.removeDevice(old.index, at: now) { emit($0) }
            let index = pipeline.addDevice(profile, keysDown: Array(old.device.keysDown), at: now) { emit($0) }
            devices[profile.node]?.index = index
            devices[profile.node]?.profile = profile
            if pipeline.isRunning {
                if profile.isDedicated { old.device.grabWhenIdle() } else { old.device.releaseGrab() }
            }
        case .removed(let node):
            remove(node, at: now)
        case .failed(let node, let error):
            emit(.error(ErrorReport("\(node): \(error)", time: now)))
        case .enumerated:
            logger.info("ready: \(devices.count) input device(s)")
            onReady()
        }
    }

    /// Lets through only the events of `device` the daemon needs
    /// (``SessionPolicy/delivery(for:)``), again whenever its roles change. A kernel without
    /// `EVIOCSMASK` (before 4.4) delivers everything, as before.
    private func listen(to device: EvdevDevice, _ profile: DeviceProfile) {
        let delivery = pipeline.session.delivery(for: profile)
        do {
            try device.deliver(delivery)
            logger.debug("events of \(profile.node): \(delivery)", metadata: ["device.name": "\(profile.description.name)"])
        } catch {
            logger.debug("\(error)")
        }
    }

    func remove(_ node: String, at now: Timestamp) {
        guard let d = devices.removeValue(forKey: node) else { return }
        d.device.close()
        pipeline.removeDevice(d.index, at: now) { emit($0) }
    }

    func handle(_ input: DeviceInput, from node: String) {
        guard let d = devices[node] else { return }
        switch input {
        case .frame(let frame):
            pipeline.handle(frame, device: d.index, now: monotonicNow()) { emit($0) }
        case .removed(let error):
            if let error { logger.warning("\(node): \(error)") }
            remove(node, at: monotonicNow())
        }
    }

    func handle(_ event: CameraSession.Event) {
        defer { scheduleDeadline() }
        let now = monotonicNow()
        switch event {
        case .started(let identity, let device, let resumed):
            guard resumed else { return }
            // The values the camera holds now follow in a `refreshed` event.
            controlsStage?.cameraAvailable(true, at: now) { emit($0) }
            if !pipeline.isRunning { startSession(at: now, camera: identity, cameraNode: device) }
        case .stopped(let reason):
            // A code like the capture events' reasons (`session-stopped`), not the readable text.
            let code =
                switch reason {
                case .cameraRemoved: "camera-removed"
                case .shutdown: "shutdown"
                }
            if pipeline.isRunning { stopSession(at: now, reason: code) }
            controlsStage?.cameraAvailable(false, at: now) { emit($0) }
        case .controlChanged, .restored:
            break  // a `refreshed` event follows, read off this thread
        case .refreshed(let controls):
            controlsStage?.cameraChanged(controls, at: now) { emit($0) }
        case .error(let error):
            emit(.error(ErrorReport("camera: \(error)", time: now)))
        }
    }

    /// A camera appeared after start: its controls join the pipeline (with every device
    /// present), and photos and videos come from it from now on.
    func cameraFound(_ session: CameraSession) {
        defer { scheduleDeadline() }
        let setup = cameras
        cameraWatch?.cancel()
        cameraWatch = nil
        cameraTask = follow(session)
        let now = monotonicNow()
        let stage = setup.controlsStage(for: session)
        controlsStage = stage
        pipeline.attachControls(stage, at: now) { emit($0) }
        emit(.session(SessionChange(.cameraAdded, camera: session.camera.identity, time: now)))
        if setup.config.daemon.captureDevice == nil {
            let old = actions
            actionsStage.runner = setup.actionRunner(for: session, continuing: old)
            liveFrames.withLock { [frames = actions.frames] in $0 = frames }
            actions.sessionChanged(running: pipeline.isRunning)
            Task { await old.shutdown() }
        }
    }

    /// The capture device is back after an unplug: its stream starts again when the
    /// session runs (``ActionRunner/sessionChanged(running:)``; a no-op when it runs still).
    func captureDeviceAdded() {
        actions.sessionChanged(running: pipeline.isRunning)
    }

    func tick() {
        pipeline.fireDeadlines(through: monotonicNow()) { emit($0) }
    }

    /// Arms the timer for the pipeline's next deadline; disarms it while there is none.
    func scheduleDeadline() {
        let next = pipeline.nextDeadline
        guard next != armed else { return }
        armed = next
        timer?.arm(atMonotonicMicroseconds: next?.microseconds)
    }

    /// Ends the session (presses in flight cancelled), closes every device and stops
    /// following the camera.
    func stop() {
        let now = monotonicNow()
        timer?.cancel()
        timer = nil
        cameraTask?.cancel()
        cameraWatch?.cancel()
        captureWatch?.cancel()
        if pipeline.isRunning { stopSession(at: now, reason: "shutdown") }
        for node in devices.keys.sorted() { remove(node, at: now) }
    }
}
