import Capture
import Evdev
import Vocabulary
import LinuxIO
import Logging
import Synchronization
import Udev
import Camera
import Output
import ConfigFile

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
        /// Each open node's profile as classified alone, before pairing.
        var alone: [String: DeviceProfile] = [:]
        /// Each open node's profile as last handed out (paired).
        var handedOut: [String: DeviceProfile] = [:]
        var pump: Task<Void, Never>?

        /// Re-pairs every open node after `alone` changed; returns the profiles that differ
        /// from what was handed out (`except` is handed out by the caller itself).
        mutating func repair(except node: String? = nil) -> [DeviceProfile] {
            let nodes = alone.keys.sorted()
            var changed: [DeviceProfile] = []
            for p in RoleClassifier.pair(nodes.map { alone[$0]! }) {
                if p.node != node && handedOut[p.node] != nil && handedOut[p.node] != p { changed.append(p) }
                handedOut[p.node] = p
            }
            return changed
        }
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
    public func events() throws(SystemError) -> AsyncStream<Event> {
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
                    // Under the lock, so the order of events is the order of changes.
                    state.withLock { s in
                        s.alone[device.node] = nil
                        s.handedOut[device.node] = nil
                        continuation.yield(.removed(node: device.node))
                        for p in s.repair() { continuation.yield(.changed(p)) }
                    }
                case .enumerated:
                    // After the `.added`/`.failed` of every device present at start.
                    let pending = state.withLock { Array($0.opening.values) }
                    for task in pending { await task.value }
                    continuation.yield(.enumerated)
                case .changed(let device):
                    state.withLock { s in
                        guard let description = s.descriptions[device.node] else { return }
                        s.alone[device.node] = profile(description, device)
                        s.handedOut[device.node] = nil
                        let changed = s.repair(except: device.node)
                        continuation.yield(.changed(s.handedOut[device.node]!))
                        for p in changed { continuation.yield(.changed(p)) }
                    }
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
                if Task.isCancelled || error.isDeviceGone { return }  // unplugged while waiting
                logger.warning("cannot open input device: \(error)", metadata: ["device.path": "\(device.node)"])
                continuation.yield(.failed(node: device.node, error))
                return
            }
            if Task.isCancelled {
                evdev.close()
                return
            }
            // Classified, paired and handed out under one lock, so this `.added` and the
            // partners' `.changed` are in the order of the changes, whatever other nodes
            // open or go meanwhile.
            let (p, partners) = state.withLock { s in
                s.descriptions[device.node] = evdev.description
                s.alone[device.node] = profile(evdev.description, device)
                let partners = s.repair(except: device.node)
                let p = s.handedOut[device.node]!
                continuation.yield(.added(p, evdev))
                for partner in partners { continuation.yield(.changed(partner)) }
                return (p, partners)
            }
            for warning in p.warnings {
                logger.warning("\(warning)", metadata: ["device.path": "\(device.node)", "device.name": "\(p.description.name)"])
            }
            logger.info(
                "input device added",
                metadata: [
                    "device.path": "\(device.node)", "device.name": "\(p.description.name)",
                    "device.kind": "\(p.kind.rawValue)", "device.roles": "\(p.roles.count)",
                ])
            for partner in partners {
                logger.info(
                    "paired with \(device.node)",
                    metadata: ["device.path": "\(partner.node)", "device.name": "\(partner.description.name)"])
            }
        }
        // If the task already finished, this leaves a finished task in the table; cancelling
        // it later (on removal or stop) does nothing.
        state.withLock { $0.opening[device.node] = task }
    }
}
