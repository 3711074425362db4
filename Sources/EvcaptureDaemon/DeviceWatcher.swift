import Capture
import Evdev
import LinuxIO
import Logging
import Synchronization
import Udev
import Camera
import Actions
import Output
import ConfigFile
import V4L2

/// Follows the input devices: udev hotplug (monitor first, then enumeration), opening each
/// evdev node (retrying EACCES while udev applies permissions), and its roles.
///
/// The consumer reads each added device with ``EvdevDevice/inputs(on:)`` on the same loop,
/// grabs dedicated ones while the session runs (``EvdevDevice/grabWhenIdle()``), and
/// closes them on `.removed`.
public final class DeviceWatcher: Sendable {
    public enum Event: Sendable {
        /// A device is open, with its roles.
        case added(DeviceProfile, EvdevDevice)
        /// Its udev properties changed (e.g. `EVCAPTURE_ROLE` after `udevadm trigger`).
        case changed(DeviceProfile)
        /// The node is gone.
        case removed(node: String)
        /// The node could not be opened (permissions still denied after waiting, ...).
        case failed(node: String, EvdevError)
        /// Every device present at start has been opened (or has failed): the daemon is ready.
        case enumerated
    }

    /// Config overrides for a device, looked up by the caller's rules (name, ids, node).
    public typealias OverridesLookup = @Sendable (DeviceDescription, String) -> RoleOverrides?

    private let loop: IOLoop
    private let source: UdevEventSource
    private let patience: Duration
    private let overrides: OverridesLookup
    private let logger: Logger
    private struct State {
        var opening: [String: Task<Void, Never>] = [:]
        var descriptions: [String: DeviceDescription] = [:]
        var pump: Task<Void, Never>?
    }
    private let state = Mutex(State())

    public init(
        loop: IOLoop, source: UdevEventSource = .automatic, patience: Duration = .seconds(5),
        logger: Logger = Logger(label: "evcapture.devices"), overrides: @escaping OverridesLookup = { _, _ in nil }
    ) {
        self.loop = loop
        self.source = source
        self.patience = patience
        self.overrides = overrides
        self.logger = logger
    }

    /// Starts watching. Devices present now come first as `.added` (or `.failed`), then
    /// `.enumerated`, then hotplug events.
    /// Ending the stream stops the watcher (open devices already handed out stay open).
    public func events() throws(UdevError) -> AsyncStream<Event> {
        let (monitor, udevEvents) = try UdevInputMonitor.start(on: loop, source: source)
        if source == .kernel || monitor.source == .kernel {
            logger.info("udevd is not running: following the kernel's events; roles come from capabilities only")
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let pump = Task { [self] in
            for await event in udevEvents {
                switch event {
                case .added(let device):
                    startOpening(device, continuation)
                case .removed(let device):
                    let pending = state.withLock { s -> Task<Void, Never>? in
                        s.descriptions[device.node] = nil
                        return s.opening.removeValue(forKey: device.node)
                    }
                    pending?.cancel()
                    logger.info("input device removed", metadata: ["device.path": "\(device.node)"])
                    continuation.yield(.removed(node: device.node))
                case .enumerated:
                    // After the `.added`/`.failed` of every device present at start.
                    let pending = state.withLock { Array($0.opening.values) }
                    for task in pending { await task.value }
                    continuation.yield(.enumerated)
                case .changed(let device):
                    guard let description = state.withLock({ $0.descriptions[device.node] }) else { continue }
                    continuation.yield(.changed(profile(description, device)))
                }
            }
            continuation.finish()
        }
        state.withLock { $0.pump = pump }
        continuation.onTermination = { [weak self] _ in
            monitor.stop()
            let tasks = self?.state.withLock { s -> [Task<Void, Never>] in
                defer { s.opening = [:]; s.pump = nil }
                return Array(s.opening.values) + (s.pump.map { [$0] } ?? [])
            }
            tasks?.forEach { $0.cancel() }
        }
        return stream
    }

    private func profile(_ description: DeviceDescription, _ device: UdevInputDevice) -> DeviceProfile {
        RoleClassifier.profile(
            for: description, node: device.node, udevRole: device.role, config: overrides(description, device.node))
    }

    private func startOpening(_ device: UdevInputDevice, _ continuation: AsyncStream<Event>.Continuation) {
        let task = Task { [self] in
            defer { _ = state.withLock { $0.opening.removeValue(forKey: device.node) } }
            let evdev: EvdevDevice
            do throws(EvdevError) {
                evdev = try await EvdevDevice.open(device.node, patience: patience)
            } catch {
                if Task.isCancelled || error.code == .noDevice { return }  // unplugged while waiting
                logger.warning("cannot open input device: \(error)", metadata: ["device.path": "\(device.node)"])
                continuation.yield(.failed(node: device.node, error))
                return
            }
            if Task.isCancelled {
                evdev.close()
                return
            }
            let p = profile(evdev.description, device)
            state.withLock { $0.descriptions[device.node] = evdev.description }
            for warning in p.warnings {
                logger.warning("\(warning)", metadata: ["device.path": "\(device.node)", "device.name": "\(p.description.name)"])
            }
            logger.info(
                "input device added",
                metadata: [
                    "device.path": "\(device.node)", "device.name": "\(p.description.name)",
                    "device.kind": "\(p.kind.rawValue)", "device.roles": "\(p.roles.count)",
                ])
            continuation.yield(.added(p, evdev))
        }
        // If the task already finished, this leaves a finished task in the table; cancelling
        // it later (on removal or stop) does nothing.
        state.withLock { $0.opening[device.node] = task }
    }
}
