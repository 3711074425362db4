import LinuxIO
import Logging
import ServiceLifecycle

/// One part of the running daemon as a service of its `ServiceGroup`
/// (docs/architecture.md#start-and-stop): the input loop, the socket, the rig link, the line
/// writers, the outputs, RTSP, WebRTC, the live view, the actions, the booth clock, the
/// devices. ``Daemon/run()`` makes and starts each in the order they depend on each other
/// (``DaemonServices``); the group then runs them until it shuts down, and stops them in
/// reverse. A part's `run` waits (the device watcher follows hotplug meanwhile), then
/// stops its part once the one after it has stopped: the group asks them one at a time,
/// last first, when it shuts down gracefully; cancelled, it asks them all at once, and the
/// order holds all the same — a loop stopped before the parts that run on it would leave
/// their last work undone.
struct DaemonService: Service, CustomStringConvertible {
    /// The service's name, which its threads carry (`evc-input` is the input loop's).
    let name: String
    /// What runs while the daemon does (the device watcher); it ends at the shutdown.
    let work: (@Sendable () async -> Void)?
    let stopPart: @Sendable () async -> Void
    /// Fulfilled once this part has stopped.
    let stopped = OneShot<Void>()
    /// The part started after this one, which stops before it (nil for the last).
    let next: OneShot<Void>?
    let logger: Logger

    var description: String { name }

    func run() async {
        if let work {
            await cancelWhenGracefulShutdown { await work() }
        } else {
            try? await gracefulShutdown()
        }
        await next?.value()
        await stopPart()
        logger.debug("stopped", metadata: ["service": "\(name)"])
        stopped.fulfil(())
    }
}

/// The daemon's parts, each added once it is made and started: the group they run in
/// (``group(logger:)``) stops them in the reverse of ``order``, also when a later part's
/// start fails (``stopAll(logger:)``: nothing is left running).
struct DaemonServices {
    /// The parts in the order they depend on each other, each on those before it: the loop
    /// every descriptor is on; the rig link (the lines' MQTT destination: it says `offline`
    /// and disconnects after their last line); the line writers and the socket; the LED and
    /// GPIO outputs; RTSP, WebRTC and the live view (they read the state's ring); the
    /// actions; the booth clock (its shots go to the actions); the devices and the session;
    /// the device watcher (hotplug into the state). A part is made when what it needs is
    /// there, so the making order differs here and there (the lines are made before the
    /// rig link, which reports its errors through them); the group follows this one.
    static let order = ["input", "rig", "lines", "outputs", "rtsp", "webrtc", "live-view", "actions", "booth", "devices", "watcher"]

    private struct Part {
        let name: String
        let work: (@Sendable () async -> Void)?
        let stop: @Sendable () async -> Void
    }
    private var parts: [Part] = []

    /// The names of the parts added, in ``order``.
    var names: [String] { sorted.map(\.name) }

    private var sorted: [Part] {
        parts.sorted { Self.order.firstIndex(of: $0.name)! < Self.order.firstIndex(of: $1.name)! }
    }

    /// `name`'s part (one of ``order``), made and started; `stop` ends it; `work` runs while
    /// the daemon does.
    mutating func add(_ name: String, work: (@Sendable () async -> Void)? = nil, stop: @escaping @Sendable () async -> Void) {
        precondition(Self.order.contains(name) && !parts.contains { $0.name == name }, "a daemon part out of DaemonServices.order: \(name)")
        parts.append(Part(name: name, work: work, stop: stop))
    }

    /// One `ServiceGroup` of the parts, each stopped after the one added after it; a part
    /// that ends or fails shuts the group down gracefully (in order), as a signal does.
    func group(logger: Logger) -> ServiceGroup {
        var services: [DaemonService] = []
        var next: OneShot<Void>?
        for part in sorted.reversed() {
            let service = DaemonService(name: part.name, work: part.work, stopPart: part.stop, next: next, logger: logger)
            services.insert(service, at: 0)
            next = service.stopped
        }
        return ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map {
                    .init(
                        service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: logger))
    }

    /// Stops every part added so far, last first (a start that failed part-way).
    func stopAll(logger: Logger) async {
        let group = group(logger: logger)
        await group.triggerGracefulShutdown()
        try? await group.run()
    }
}
