#if canImport(Glibc)
import Glibc
#endif
import Capture
import Evdev
import FoundationEssentials
import IOLoop
import Logging
import ServiceLifecycle
import Synchronization
import Udev

/// The current CLOCK_MONOTONIC time: the clock evdev devices are switched to, so kernel
/// event times and deadlines compare directly.
public func monotonicNow() -> Timestamp {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Timestamp(microseconds: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
}

/// Where the daemon's JSON lines and readable lines go.
public struct DaemonOutputOptions: Sendable {
    /// JSON lines on stdout (`--json`); otherwise readable lines.
    public var json: Bool
    /// The Unix socket for JSON lines (`--socket`), nil for none.
    public var socketPath: String?
    public init(json: Bool = false, socketPath: String? = nil) {
        self.json = json
        self.socketPath = socketPath
    }
}

/// `evcapture run`: input devices → the pipeline → actions, camera controls and JSON lines.
///
/// Threads and tasks: one ``IOLoop`` thread reads every device, the udev monitor and the
/// camera's control events, and owns the daemon's state (``DaemonState``, an actor whose
/// executor is that loop): a frame read from a device goes through the ``Pipeline`` on the
/// same thread, in the same wake-up, with no hop and no lock. Hotplug and camera events
/// reach the state from their tasks by `await`. Actions run in ``ActionRunner``'s own
/// workers; output lines are written by a writer task. Nothing on the input path waits
/// for the camera's frames, the disk, a child process or a client (a camera control is
/// set there, one ioctl). While idle nothing wakes: the deadline timer (a timerfd on the
/// loop) is armed only while a deadline exists.
public final class Daemon: Service, Sendable {
    public let config: Config
    public let output: DaemonOutputOptions
    private let logger: Logger
    /// Called once the first device enumeration is done (READY=1 for systemd).
    private let onReady: @Sendable () -> Void

    public init(config: Config, output: DaemonOutputOptions, logger: Logger, onReady: @escaping @Sendable () -> Void = {}) {
        self.config = config
        self.output = output
        self.logger = logger
        self.onReady = onReady
    }

    /// Runs until the service group shuts down (SIGTERM / SIGINT) — then releases grabs,
    /// finishes a recording in progress, closes every file and returns.
    public func run() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let lines = LineWriter(json: output.json)
        var socket: SocketServer?
        if let path = output.socketPath ?? config.daemon.socketPath {
            socket = try SocketServer(path: path, loop: loop, logger: logger)
            lines.socket = socket
        }
        defer { socket?.stop() }

        // Camera (controls) — optional: without one, capture events and hooks still work,
        // and a camera plugged in later is picked up.
        let cameras = CameraSetup(config: config, loop: loop, logger: logger, lines: lines)
        let cameraSession = cameras.openAtStart()
        if config.daemon.outputDirectory == nil {
            // A fresh install has no ~/Pictures/evcapture yet: every photo would fail.
            do { try AtomicFile.makeDirectory(DaemonSettings.defaultOutputDirectory()) } catch { logger.warning("\(error)") }
        }

        let state = DaemonState(
            pipeline: Pipeline(settings: config.capture, controls: cameraSession.map { cameras.controlsStage(for: $0) }),
            loop: loop, lines: lines, actions: cameras.actionRunner(for: cameraSession), cameras: cameras,
            logger: logger, onReady: onReady)
        try await state.start(camera: cameraSession)

        // Devices.
        let watcher = DeviceWatcher(loop: loop, logger: logger, overrides: { [config] d, node in config.overrides(for: d, node: node) })
        let watcherEvents = try watcher.events()
        let watcherTask = Task {
            for await event in watcherEvents { await state.handle(event) }
        }
        defer { watcherTask.cancel() }

        let (shutdown, shutdownRequested) = AsyncStream.makeStream(of: Never.self)
        await withGracefulShutdownHandler {
            for await _ in shutdown {}
        } onGracefulShutdown: {
            shutdownRequested.finish()
        }

        // Shutdown: presses in flight are cancelled, grabs released, devices closed.
        watcherTask.cancel()
        let actions = await state.stop()
        await actions.shutdown()
        // Every line written (the last `session stopped` included), to stdout and to the
        // socket's clients, before the socket closes and the process exits.
        await lines.finishAndFlush()
        socket?.stop()
        logger.info("stopped")
    }
}

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
    let lines: LineWriter
    var actions: ActionRunner
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
    /// Key releases the input core made up (``Frame/releasedByKernel``), per node, held
    /// until `decideBy`: a removal of the device before then means it was unplugged (its
    /// presses are cancelled `device-removed`, not ended: nobody let go of the key);
    /// otherwise it was reset (resume) and they count as lost events.
    var heldReleases: [String: (frame: Frame, decideBy: Timestamp)] = [:]
    /// How long a kernel release waits for the removal that usually follows within
    /// microseconds (the same `input_unregister_device` call).
    static let removalGrace = Duration.seconds(1)

    init(
        pipeline: Pipeline, loop: IOLoop, lines: LineWriter, actions: ActionRunner, cameras: CameraSetup, logger: Logger,
        onReady: @escaping @Sendable () -> Void
    ) {
        unownedExecutor = loop.asUnownedSerialExecutor()
        self.pipeline = pipeline
        self.loop = loop
        self.lines = lines
        self.actions = actions
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
        startSession(at: monotonicNow(), extra: session.map { [("camera", .string($0.camera.identity))] } ?? [])
        if let session {
            cameraTask = follow(session)
        } else if cameras.config.daemon.camera != .none {
            cameraWatch = cameras.waitForCamera { [weak self] session in await self?.cameraFound(session) }
        }
        scheduleDeadline()
    }

    private func follow(_ session: CameraSession) -> Task<Void, Never> {
        Task { [weak self] in
            async let following: Void = session.run()
            for await event in session.events { await self?.handle(event) }
            await following
        }
    }

    func emit(_ output: ReplayOutput) {
        switch output {
        case .capture(let event):
            for trigger in ActionTrigger.triggers(for: event, time: Date().timeIntervalSince1970) { actions.handle(trigger) }
            lines.emit(event)
        case .line(let json, let text):
            lines.emit(json: json, text: text)
        }
    }

    func startSession(at now: Timestamp, extra: [(String, JSONValue)] = []) {
        pipeline.sessionStarted(at: now, extra: extra) { emit($0) }
        for d in devices.values where d.profile.isDedicated { d.device.grabWhenIdle() }
    }

    func stopSession(at now: Timestamp, extra: [(String, JSONValue)] = []) {
        pipeline.sessionStopped(at: now, extra: extra) { emit($0) }
        for d in devices.values { d.device.releaseGrab() }
    }

    func handle(_ event: DeviceWatcher.Event) {
        defer { scheduleDeadline() }
        let now = monotonicNow()
        switch event {
        case .added(let profile, let device):
            guard devices[profile.node] == nil else { return }
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
            releaseHeld(profile.node, at: now)
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
            lines.emit(
                json: JSONLines.error("\(node): \(error)", time: now), text: "error: \(node): \(error)")
        case .enumerated:
            logger.info("ready: \(devices.count) input device(s)")
            onReady()
        }
    }

    func remove(_ node: String, at now: Timestamp) {
        heldReleases[node] = nil
        guard let d = devices.removeValue(forKey: node) else { return }
        d.device.close()
        pipeline.removeDevice(d.index, at: now) { emit($0) }
    }

    func handle(_ input: DeviceInput, from node: String) {
        guard let d = devices[node] else { return }
        switch input {
        case .frame(let frame):
            releaseHeld(node, at: frame.time)
            if frame.releasedByKernel {
                heldReleases[node] = (frame, monotonicNow() + Self.removalGrace)
                return
            }
            pipeline.handle(frame, device: d.index) { emit($0) }
        case .removed(let error):
            if let error { logger.warning("\(node): \(error)") }
            remove(node, at: monotonicNow())
        }
    }

    func handle(_ event: CameraSession.Event) {
        defer { scheduleDeadline() }
        let now = monotonicNow()
        var out: [ReplayOutput] = []
        let stage = pipeline.controls as? CameraControlsStage
        switch event {
        case .started(let identity, let device, let resumed):
            guard resumed else { return }
            out += stage?.cameraAvailable(true, at: now) ?? []
            out += stage?.cameraChanged(at: now) ?? []
            for o in out { emit(o) }
            if !pipeline.isRunning { startSession(at: now, extra: [("camera", .string(identity)), ("device", .string(device))]) }
        case .stopped(let reason):
            // A code like the capture events' reasons (`session-stopped`), not the readable text.
            let code = switch reason {
            case .cameraRemoved: "camera-removed"
            case .shutdown: "shutdown"
            }
            if pipeline.isRunning { stopSession(at: now, extra: [("reason", .string(code))]) }
            for o in stage?.cameraAvailable(false, at: now) ?? [] { emit(o) }
        case .controlChanged, .restored:
            for o in stage?.cameraChanged(at: now) ?? [] { emit(o) }
        case .error(let error):
            lines.emit(json: JSONLines.error("camera: \(error)", time: now), text: "error: camera: \(error)")
        }
    }

    /// Feeds a held kernel release as lost events (the device stayed: it was reset).
    func releaseHeld(_ node: String, at now: Timestamp) {
        guard let held = heldReleases.removeValue(forKey: node), let d = devices[node] else { return }
        pipeline.eventsLost(device: d.index, changes: held.frame.events, at: max(now, pipeline.clock)) { emit($0) }
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
        pipeline.attachControls(setup.controlsStage(for: session), at: now) { emit($0) }
        lines.emit(
            json: JSONLines.session("camera-added", time: now, extra: [("camera", .string(session.camera.identity))]),
            text: "\(ReadableLines.pad(now.description, 12)) camera    \(session.camera.identity)")
        if setup.config.daemon.captureDevice == nil {
            let old = actions
            actions = setup.actionRunner(for: session)
            Task { await old.shutdown() }
        }
    }

    func tick() {
        let now = monotonicNow()
        for (node, held) in heldReleases where held.decideBy <= now { releaseHeld(node, at: now) }
        pipeline.fireDeadlines(through: monotonicNow()) { emit($0) }
    }

    /// Arms the timer for the next deadline (the pipeline's, or a held release's); disarms
    /// it while there is none.
    func scheduleDeadline() {
        let next = ([pipeline.nextDeadline] + heldReleases.values.map(\.decideBy)).compactMap { $0 }.min()
        guard next != armed else { return }
        armed = next
        timer?.arm(atMonotonicMicroseconds: next?.microseconds)
    }

    /// Ends the session (presses in flight cancelled), closes every device and stops
    /// following the camera; returns the action runner to shut down.
    func stop() -> ActionRunner {
        let now = monotonicNow()
        timer?.cancel()
        timer = nil
        cameraTask?.cancel()
        cameraWatch?.cancel()
        if pipeline.isRunning { stopSession(at: now, extra: [("reason", .string("shutdown"))]) }
        for node in devices.keys.sorted() { remove(node, at: now) }
        return actions
    }
}

/// Writes the daemon's lines (stdout, and the socket when there is one) off the input path:
/// `emit` queues; a writer task per destination formats capture events and writes. A stuck
/// stdout delays only its writer.
final class LineWriter: Sendable {
    /// A line, or what to make it from: capture events are formatted by the writers, off
    /// the input thread.
    private enum Line: Sendable {
        case ready(json: String, text: String)
        case capture(CaptureEvent)

        var json: String {
            switch self {
            case .ready(let j, _): j
            case .capture(let e): JSONLines.capture(e)
            }
        }
        /// Control characters escaped: names come from devices (``ReadableLines/escaped(_:)``).
        var text: String {
            switch self {
            case .ready(_, let t): ReadableLines.escaped(t)
            case .capture(let e): ReadableLines.escaped(ReadableLines.capture(e))
            }
        }
    }
    private let json: Bool
    private let toStdout: AsyncStream<Line>.Continuation
    private let stdoutWriter: Task<Void, Never>
    /// The socket's own queue and writer: a stuck stdout does not hold its clients back.
    private let toSocket = Mutex<(server: SocketServer, queue: AsyncStream<Line>.Continuation, writer: Task<Void, Never>)?>(nil)

    /// Sends JSON lines to `server` from now on.
    var socket: SocketServer? {
        get { toSocket.withLock { $0?.server } }
        set {
            let replacement = newValue.map { server in
                let (stream, queue) = AsyncStream.makeStream(of: Line.self, bufferingPolicy: .bufferingNewest(10_000))
                return (server: server, queue: queue, writer: Task.detached { for await line in stream { server.broadcast(line.json) } })
            }
            let old = toSocket.withLock { s in
                defer { s = replacement }
                return s?.queue
            }
            old?.finish()
        }
    }

    init(json: Bool) {
        self.json = json
        let (stream, continuation) = AsyncStream.makeStream(of: Line.self, bufferingPolicy: .bufferingNewest(10_000))
        toStdout = continuation
        stdoutWriter = Task.detached {
            for await item in stream {
                var l = (json ? item.json : item.text) + "\n"
                l.withUTF8 { b in
                    var off = 0
                    while off < b.count {
                        let n = Glibc.write(1, b.baseAddress! + off, b.count - off)
                        if n < 0 && errno == EINTR { continue }
                        if n <= 0 { return }
                        off += n
                    }
                }
            }
        }
    }

    func emit(json line: String, text: String) {
        enqueue(.ready(json: line, text: text))
    }

    /// A capture event's line, formatted by the writers.
    func emit(_ event: CaptureEvent) {
        enqueue(.capture(event))
    }

    private func enqueue(_ line: Line) {
        toSocket.withLock { _ = $0?.queue.yield(line) }
        toStdout.yield(line)
    }

    func emitOutcome(_ outcome: ActionOutcome) {
        let now = monotonicNow()
        switch outcome {
        case .photoSaved(let r, let press):
            emit(
                json: JSONLines.object(event: "action", time: now, [("action", .string("photo")), ("press", .int(Int64(press))), ("file", .string(r.path))]),
                text: "\(ReadableLines.pad(now.description, 12)) photo     \(r.path) (press \(press))")
        case .videoStarted(let press):
            emit(
                json: JSONLines.object(event: "action", time: now, [("action", .string("video-started")), ("press", .int(Int64(press)))]),
                text: "\(ReadableLines.pad(now.description, 12)) video     recording (press \(press))")
        case .videoSaved(let r, let press):
            emit(
                json: JSONLines.object(
                    event: "action", time: now,
                    [("action", .string("video")), ("press", .int(Int64(press))), ("file", .string(r.path)), ("frames", .int(Int64(r.frames)))]),
                text: "\(ReadableLines.pad(now.description, 12)) video     \(r.path), \(r.frames) frames (press \(press))")
        case .hookFinished(let name, let result, let press):
            emit(
                json: JSONLines.object(
                    event: "action", time: now, [("action", .string("hook")), ("press", .int(Int64(press))), ("hook", .string(name)), ("result", .string("\(result)"))]),
                text: "\(ReadableLines.pad(now.description, 12)) hook      \(name): \(result) (press \(press))")
        case .soundStarted(let file, let press):
            emit(
                json: JSONLines.object(event: "action", time: now, [("action", .string("sound")), ("press", .int(Int64(press))), ("file", .string(file))]),
                text: "\(ReadableLines.pad(now.description, 12)) sound     \(file) (press \(press))")
        case .failed(let error, let press):
            var fields: [(String, JSONValue)] = [("code", .string(error.code))]
            if let press { fields.append(("press", .int(Int64(press)))) }
            emit(
                json: JSONLines.error(error.description, time: now, extra: fields),
                text: "\(ReadableLines.pad(now.description, 12)) error     \(error)" + (press.map { " (press \($0))" } ?? ""))
        }
    }

    /// Ends the stream and waits until every queued line is written: the last lines
    /// (presses cancelled by the shutdown, the recording finished, `session stopped`) must
    /// be out before the process exits.
    func finishAndFlush() async {
        let socketWriter = toSocket.withLock { s -> Task<Void, Never>? in
            s?.queue.finish()
            return s?.writer
        }
        toStdout.finish()
        await socketWriter?.value
        await stdoutWriter.value
    }
}

/// How the daemon gets its camera: at start, or when one is plugged in later; the
/// controls stage and the action runner that go with it.
struct CameraSetup: Sendable {
    let config: Config
    let loop: IOLoop
    let logger: Logger
    let lines: LineWriter

    private var configuration: CameraSession.Configuration {
        let selector: CameraSelector
        switch config.daemon.camera {
        case .path(let p): selector = .path(p)
        default: selector = .automatic
        }
        return .init(camera: selector, onExternalChange: config.daemon.followExternalChanges ? .follow : .restore)
    }

    /// The configured (or first suitable) camera, if it is there now.
    func openAtStart() -> CameraSession? {
        guard config.daemon.camera != .none else { return nil }
        do {
            return try CameraSession(configuration, loop: loop, logger: logger)
        } catch {
            logger.warning("no camera for controls (waiting for one): \(error)")
            lines.emit(
                json: JSONLines.error("camera: \(error)", time: monotonicNow()),
                text: "no camera for controls, waiting for one: \(error)")
            return nil
        }
    }

    /// Waits (on udev, no polling) for a video device that makes a usable camera.
    func waitForCamera(found: @escaping @Sendable (CameraSession) async -> Void) -> Task<Void, Never> {
        let (loop, logger, configuration) = (self.loop, self.logger, self.configuration)
        return Task {
            let monitor: UdevVideoMonitor
            let events: AsyncStream<UdevVideoEvent>
            do {
                (monitor, events) = try UdevVideoMonitor.start(on: loop)
            } catch {
                logger.warning("cannot follow camera hotplug: \(error)")
                return
            }
            defer { monitor.stop() }
            for await event in events {
                guard case .added = event else { continue }
                if let session = try? CameraSession(configuration, loop: loop, logger: logger) {
                    await found(session)
                    return
                }
            }
        }
    }

    func controlsStage(for session: CameraSession) -> CameraControlsStage {
        let stateFile = ControlStateFile()
        let remembered = (try? stateFile?.load()) ?? nil
        let stage = CameraControlsStage(
            camera: session.camera, configuration: config.daemon.controlsConfiguration,
            rememberedControl: remembered, controls: config.daemon.controls)
        stage.onCurrentControl = { [logger] name in
            do { try stateFile?.save(currentControl: name) } catch { logger.warning("cannot remember the current control: \(error)") }
        }
        return stage
    }

    /// Photos and videos from the configured capture device, else from the camera.
    func actionRunner(for session: CameraSession?) -> ActionRunner {
        let d = config.daemon
        let captureDevice = d.captureDevice ?? session?.camera.devicePath
        var bindings = ["primary": d.primary.binding]
        if let secondary = d.secondary { bindings["secondary"] = secondary.binding }
        let sound: SoundSetting
        switch d.sound {
        case .off: sound = .off
        case .file(let f): sound = .file(f)
        case .builtIn: sound = .builtIn(directory: ShutterSound.defaultDirectory())
        }
        let lines = self.lines
        return ActionRunner(
            configuration: ActionsConfiguration(
                capture: captureDevice.map {
                    CaptureSettings(
                        devicePath: $0, outputDirectory: d.outputDirectory ?? DaemonSettings.defaultOutputDirectory(),
                        photoPattern: d.photoName, videoPattern: d.videoName, width: d.width, height: d.height,
                        jpegQuality: d.jpegQuality)
                },
                bindings: bindings, hooks: d.hooks, sound: sound),
            logger: logger,
            onOutcome: { outcome in lines.emitOutcome(outcome) })
    }
}
