#if canImport(Glibc)
import Glibc
#endif
import Capture
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
import MQTT
import Rig
import LiveView
import LiveH264
import Movie
import RTSP
import WebRTC
import LibcameraCamera
import OutputDevices
import Recording

/// Where the daemon's JSON lines and readable lines go.
public struct DaemonOutputOptions: Sendable {
    /// JSON lines on stdout (`--json`); otherwise readable lines.
    public var json: Bool
    /// The Unix socket for JSON lines (`--socket`), nil for none.
    public var socketPath: String?
    /// Lines on stdout at all (an app embedding the daemon says no).
    public var stdout: Bool
    public init(json: Bool = false, socketPath: String? = nil, stdout: Bool = true) {
        self.json = json
        self.socketPath = socketPath
        self.stdout = stdout
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
/// for the camera's frames, the disk, a child process, a client or a camera control: a
/// knob's value is handed to the camera's control-writer thread (latest value wins). While idle nothing wakes: the deadline timer (a timerfd on the
/// loop) is armed only while a deadline exists.
public final class Daemon: Service, Sendable {
    public let config: Config
    public let output: DaemonOutputOptions
    let logger: Logger
    /// Called once the first device enumeration is done (READY=1 for systemd).
    private let onReady: @Sendable () -> Void
    /// Sees every event on the I/O thread, in order, before the line writers (must not block).
    private let observer: (@Sendable (PipelineEvent) -> Void)?

    public init(
        config: Config, output: DaemonOutputOptions, logger: Logger, onReady: @escaping @Sendable () -> Void = {},
        observer: (@Sendable (PipelineEvent) -> Void)? = nil
    ) {
        self.config = config
        self.output = output
        self.logger = logger
        self.onReady = onReady
        self.observer = observer
    }

    /// Runs until the service group shuts down (SIGTERM / SIGINT) — then releases grabs,
    /// finishes a recording in progress, closes every file and returns.
    public func run() async throws {
        for w in config.warnings { logger.warning("\(w)") }
        // Where photos go, checked before anything starts: a directory that cannot be written
        // would otherwise show only at the first photo.
        if let dir = config.daemon.outputDirectory {
            try OutputDirectory.prepare(dir)
        } else {
            // A fresh install has no ~/Pictures/evcapture yet: every photo would fail.
            do { try OutputDirectory.prepare(DaemonSettings.defaultOutputDirectory()) } catch { logger.warning("\(error)") }
        }
        // The daemon's parts as one ServiceGroup of named services (docs/architecture.md#start-and-stop):
        // each added as it is made and started; the group stops them in reverse, whether the
        // daemon is asked to stop or a part's start fails part-way.
        var services = DaemonServices()
        do {
            try await start(&services)
        } catch {
            await services.stopAll(logger: logger)
            throw error
        }
        logger.debug("running", metadata: ["services": "\(services.names.joined(separator: " "))"])
        try await services.group(logger: logger).run()
        logger.info("stopped")
    }

    /// Makes and starts the parts, each added to `services` as it starts.
    private func start(_ services: inout DaemonServices) async throws {
        let loop = try IOLoop(name: "evc-input")
        services.add("input") { loop.stop() }
        let lines = LineWriter(json: output.json, stdout: output.stdout)
        var socket: SocketServer?
        if let path = output.socketPath ?? config.daemon.socketPath {
            socket = try SocketServer(path: path, loop: loop, logger: logger)
        } else if let path = DaemonSettings.defaultSocketPath() {
            // The default socket, for `evcapture monitor` without options. Another daemon of
            // this user already there keeps it; this one runs without.
            do {
                socket = try SocketServer(path: path, loop: loop, logger: logger)
                logger.info("JSON lines on \(path) (evcapture monitor)")
            } catch {
                logger.warning("no socket: \(error)")
            }
        }
        lines.socket = socket
        // Every line written (the last `session stopped` included) to stdout and the socket's
        // clients, then the socket closed.
        services.add("lines") { [socket] in
            await lines.finishAndFlush()
            socket?.stop()
        }

        // Camera (controls) — optional: without one, capture events and hooks still work,
        // and a camera plugged in later is picked up.
        // LEDs and GPIO lines (`[outputs]`, docs/booth.md#outputs): one that cannot be opened
        // is one error line, the others go on.
        let outputs =
            try config.daemon.outputs.isEmpty
            ? nil
            : Outputs(config.daemon.outputs, logger: logger) { problem in
                lines.emit(.error(ErrorReport(problem, code: "output", time: monotonicNow())))
            }
        if let outputs { services.add("outputs") { outputs.stop() } }
        // Every event and outcome goes to each sink in turn (docs/architecture.md#events-and-sinks):
        // the outputs, the app's observer, then the lines (stdout, socket, MQTT, live view).
        var sinks: [any EventSink] = []
        if let outputs { sinks.append(outputs) }
        if let observer { sinks.append(PipelineObserver(observer)) }
        sinks.append(lines)
        // Home Assistant's camera image (docs/mqtt.md#home-assistant): with discovery, the
        // latest photo goes to the broker.
        let latestPhoto = config.daemon.mqtt != nil && config.daemon.rig?.discoveryPrefix != nil ? LatestPhotoPublisher(lines: lines) : nil
        if let latestPhoto { sinks.append(latestPhoto) }
        let events = EventFanOut(sinks)
        var cameras = CameraSetup(config: config, loop: loop, logger: logger, events: events)
        let cameraSession = cameras.openAtStart()
        // libcamera (docs/libcamera.md): loaded only when asked for, or for `auto` when V4L2
        // has no camera. Its camera added again after an unplug restarts the capture stream.
        let libcameraChanges = Mutex<(@Sendable (String, Bool) -> Void)?>(nil)
        let (libcameraLine, libcameraChoice) = LibcameraStartup.choose(
            backend: config.daemon.cameraBackend, cameraID: config.daemon.libcameraCamera,
            v4l2CameraFound: config.daemon.v4l2GivesTheCamera(openAtStart: cameraSession != nil),
            libcamera: { Libcamera.start { id, added in libcameraChanges.withLock { $0 }?(id, added) } })
        cameras.libcamera = libcameraChoice.map { LibcameraSource($0, liveViewWidth: config.daemon.http?.previewWidth) }
        if let libcameraLine {
            // With its camera and a live view: where its frames come from (docs/libcamera.md#two-streams).
            let liveView = cameras.libcamera.flatMap { source in
                source.liveViewWidth.map { _ in
                    "; \(source.liveViewStream(width: config.daemon.capture.width, height: config.daemon.capture.height))"
                }
            }
            logger.warning("\(libcameraLine)\(liveView ?? "")")
        }
        // Recordings a kill or a power loss cut short are kept (finished and named, each
        // said in an `action` line); unfinished photos (hidden `.evcapture-*.part`) go.
        let outputDirectory = config.daemon.outputDirectory ?? DaemonSettings.defaultOutputDirectory()
        let recovery = VideoRecovery.recover(in: outputDirectory)
        for video in recovery.recovered {
            logger.info(
                "kept a recording an earlier run left unfinished",
                metadata: ["file.path": "\(video.path)", "video.frames": "\(video.frames)"])
            events.emit(.videoRecovered(video), at: monotonicNow())
        }
        let leftovers = recovery.removed + AtomicFile.removeLeftovers(in: outputDirectory)
        if !leftovers.isEmpty {
            logger.info(
                "removed \(leftovers.count) unfinished file(s) an earlier run left",
                metadata: ["file.directory": "\(outputDirectory)", "file.names": "\(leftovers.joined(separator: " "))"])
        }

        let runner = cameras.actionRunner(for: cameraSession)
        let state = DaemonState(
            settings: config.capture, session: config.daemon.session,
            controls: cameraSession.map { cameras.controlsStage(for: $0) }
                ?? cameras.libcamera.map { cameras.controlsStage(camera: $0.controls) },
            loop: loop, events: events, actions: runner, cameras: cameras,
            logger: logger, onReady: onReady)
        // The runner in use then (a camera found later brings another): a recording in
        // progress finished, the workers ended.
        services.add("actions") { await state.actions.shutdown() }
        // No countdown second or timelapse shot after the devices stopped (the runners that
        // follow take the same clock over).
        if runner.hasBoothClock { services.add("booth") { await state.actions.stopBoothClock() } }
        // The rig (`[mqtt]`): without it no network socket is opened. Triggers reach the
        // state on the loop thread (libmosquitto's callbacks run there).
        var rig: RigLink?
        if let connection = config.daemon.mqtt, let settings = config.daemon.rig {
            let link = try RigLink(
                connection: connection, rig: settings, links: config.daemon.http.map { StationLinks($0, rtsp: config.daemon.rtsp) },
                photos: latestPhoto,
                loop: loop, lines: lines, logger: logger,
                onTrigger: { [weak state] topic, payload in state?.assumeIsolated { $0.acceptTrigger(topic: topic, payload: payload) } })
            lines.add(link)
            await state.attach(link)
            rig = link
            // After the last lines: `offline`, then DISCONNECT.
            services.add("rig") { await link.client.stop() }
        }
        // The camera's live H.264, shared by RTSP clients and WebRTC viewers: nothing runs
        // until one of them watches (docs/live-view.md#h264).
        let h264 = config.daemon.capture.h264
        let liveH264 = LiveH264Stream(
            source: .init(
                frames: { [weak state] in state?.liveFrames.withLock { $0 } }, settings: h264, encoder: { EncoderChoice.current(h264) }),
            logger: logger)
        // The live view (`[http]`): without it no HTTP socket is opened.
        var webRTC: WebRTCViewers?
        if let http = config.daemon.http {
            if http.webRTC {
                var settings = WebRTCSettings()
                settings.localAddress = http.listen.isEveryAddress ? nil : http.listen.host
                settings.stunServer = http.stunServer
                settings.turnServer = http.turnServer
                settings.maxViewers = http.maxClients
                let viewers = WebRTCViewers(settings: settings, stream: liveH264, logger: logger)
                webRTC = viewers
                services.add("webrtc") { viewers.stop() }
            }
            let hooks = LiveViewHooks(
                frames: { [weak state] in state?.liveFrames.withLock { $0 } }, viewfinder: cameras.libcamera?.viewfinder, whep: webRTC,
                input: { [weak state] input in Task { await state?.accept(input) } })
            let server = try LiveViewServer(
                settings: http, outputDirectory: outputDirectory, snapshotQuality: config.daemon.capture.jpegQuality, hooks: hooks,
                logger: logger)
            try await server.start()
            services.add("live-view") { await server.stop() }
            lines.add(server.eventSink)
        }
        // RTSP (`[rtsp]`, docs/live-view.md#rtsp): GStreamer loads and the port is bound on a
        // thread of their own; the camera's H.264 is made only while a client watches.
        if let rtsp = config.daemon.rtsp {
            let server = RTSPServer(settings: rtsp, stream: liveH264, logger: logger)
            // Off the start-up path: loading GStreamer can take seconds (its plugin registry).
            startThread(name: "evc-rtsp-start") {
                do { try server.start() } catch {
                    lines.emit(.error(ErrorReport("\(error)", code: "rtsp", time: monotonicNow())))
                }
            }
            services.add("rtsp") { server.stop() }
        }
        try await state.start(camera: cameraSession)
        // Presses in flight cancelled, grabs released, devices closed.
        services.add("devices") { await state.stop() }
        if let id = cameras.libcamera?.choice.camera.id {
            libcameraChanges.withLock {
                $0 = { [weak state, logger] changed, added in
                    guard changed == id else { return }
                    logger.info(added ? "libcamera camera is back" : "libcamera camera went away", metadata: ["libcamera.camera": "\(id)"])
                    if added { Task { await state?.captureDeviceAdded() } }
                }
            }
        }
        if let rig {
            try await rig.client.start()
            // Off the loop and after start-up: a station's first trigger should cost what the
            // others do (it took several times as long without this).
            Task.detached(priority: .background) { rig.warmUp() }
        }

        // Devices.
        let watcher = DeviceWatcher(loop: loop, logger: logger, overrides: { [config] d, node in config.overrides(for: d, node: node) })
        let watcherEvents = try watcher.events()
        services.add("watcher", work: { for await event in watcherEvents { await state.handle(event) } }, stop: {})
    }
}
