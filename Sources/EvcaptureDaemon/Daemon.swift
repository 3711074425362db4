#if canImport(Glibc)
import Glibc
#endif
import Capture
import Evdev
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
import V4L2

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
        for w in config.warnings { logger.warning("\(w)") }
        // Where photos go, checked before anything starts: a directory that cannot be written
        // would otherwise show only at the first photo.
        if let dir = config.daemon.outputDirectory {
            try OutputDirectory.prepare(dir)
        } else {
            // A fresh install has no ~/Pictures/evcapture yet: every photo would fail.
            do { try OutputDirectory.prepare(DaemonSettings.defaultOutputDirectory()) } catch { logger.warning("\(error)") }
        }
        let loop = try IOLoop()
        defer { loop.stop() }
        let lines = LineWriter(json: output.json)
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
        defer { socket?.stop() }

        // Camera (controls) — optional: without one, capture events and hooks still work,
        // and a camera plugged in later is picked up.
        let cameras = CameraSetup(config: config, loop: loop, logger: logger, lines: lines)
        let cameraSession = cameras.openAtStart()

        let state = DaemonState(
            settings: config.capture, session: config.daemon.session, controls: cameraSession.map { cameras.controlsStage(for: $0) }, loop: loop, lines: lines, actions: cameras.actionRunner(for: cameraSession), cameras: cameras,
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

