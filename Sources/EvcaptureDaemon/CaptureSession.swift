import Actions
import Camera
import Vocabulary
import Runtime
import ServiceLifecycle
import ConfigFile
import Logging
import Synchronization

/// The whole path for an app, in a few lines: input devices found and followed, capture
/// events delivered to the interaction's primary and secondary handlers (each on its own
/// ordered queue, through the same ``CaptureDispatcher`` a library user would build), every
/// typed event as an `AsyncSequence`, the camera's controls bound to the knobs, and the
/// session started and stopped by the app.
///
/// It runs the daemon itself (``Daemon``) without stdout: the same pipeline, devices, grabs,
/// camera session and actions. By default it takes no photos and records nothing (the app's
/// handlers decide); pass a ``Config`` to change that.
public final class CaptureSession: Sendable {
    /// Every event (capture, device, session, control, …), in order, as long as the session runs.
    public let events: AsyncStream<PipelineEvent>
    private let continuation: AsyncStream<PipelineEvent>.Continuation
    private let daemon: Daemon
    /// The daemon's service group and the task running it, while the session runs.
    private let running = Mutex<(group: ServiceGroup, task: Task<Void, any Error>)?>(nil)

    /// A config whose buttons only report: no photo, no video.
    public static var reportingConfig: Config {
        var c = Config()
        c.daemon.primary = .none
        c.daemon.secondary = c.capture.hasSecondaryHandler ? ActionBinding.none : nil
        return c
    }

    /// `camera`: the camera whose controls the knobs drive (default: the first with a zoom or
    /// exposure control; nil: none).
    public init(
        interaction: CaptureEventInteraction, camera: CameraSelector? = .automatic, config: Config = reportingConfig,
        logger: Logger = Logger(label: "evcapture")
    ) {
        var config = config
        config.daemon.camera = camera
        config.capture.hasSecondaryHandler = interaction.hasSecondaryHandler
        let dispatcher = CaptureDispatcher(interaction: interaction)
        let (events, continuation) = AsyncStream.makeStream(of: PipelineEvent.self, bufferingPolicy: .bufferingNewest(1024))
        self.events = events
        self.continuation = continuation
        daemon = Daemon(
            config: config, output: DaemonOutputOptions(stdout: false), logger: logger,
            observer: { event in
                if case .capture(let capture) = event { dispatcher.deliver(capture) }
                continuation.yield(event)
            })
    }

    /// Starts the session: devices are opened and followed, the camera's controls bound.
    ///
    /// The daemon runs as it does under `evcapture run`, in a service group of its own
    /// (docs/architecture.md#start-and-stop): ``stop()`` shuts it down gracefully, its parts in
    /// reverse order, as SIGTERM does.
    public func start() {
        let daemon = self.daemon, continuation = self.continuation
        running.withLock { r in
            guard r == nil else { return }
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)], logger: daemon.logger))
            let task = Task {
                defer { continuation.finish() }
                try await group.run()
            }
            r = (group, task)
        }
    }

    /// Stops the session (presses in flight cancelled, grabs released, a recording in
    /// progress finished) and waits until every part of the daemon has stopped.
    public func stop() async {
        guard let (group, task) = running.withLock({ $0 }) else { return }
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
