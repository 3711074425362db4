#if canImport(Glibc)
import Glibc
#endif
import CLibudev
import LinuxIO
import Synchronization

/// What udev (or the kernel) says about one device node: the raw material of a
/// ``UdevDeviceKind``.
public struct UdevRecord: Hashable, Sendable {
    /// `/dev/input/event3`, `/dev/video0`.
    public var node: String
    /// `/sys/devices/.../video4linux/video0`.
    public var syspath: String
    /// `event3`, `video0`.
    public var sysname: String
    /// Every property. Without udevd only the kernel's (`DEVNAME`, `MAJOR`, `MINOR`, ...).
    public var properties: [String: String]
    /// The sysfs attributes the kind asked for (``UdevDeviceKind/attributes``) that could be
    /// read; none for a device that is already gone.
    public var attributes: [String: String]

    public init(
        node: String, syspath: String, sysname: String, properties: [String: String],
        attributes: [String: String] = [:]
    ) {
        self.node = node
        self.syspath = syspath
        self.sysname = sysname
        self.properties = properties
        self.attributes = attributes
    }
}

/// A kind of device node a ``UdevMonitor`` follows: one udev subsystem, the nodes of it that
/// count, and the value each becomes. ``UdevInputDevice`` and ``UdevVideoDevice`` are the two.
public protocol UdevDeviceKind: Hashable, Sendable {
    /// The udev subsystem: `input`, `video4linux`.
    static var subsystem: String { get }
    /// The sysname prefix of the nodes wanted (`event`, not `input*`/`mouse*`/`js*`).
    static var sysnamePrefix: String { get }
    /// sysfs attributes read along with the properties (`index`, `name`).
    static var attributes: [String] { get }
    /// Where the node is when neither udev nor the kernel names it (`/dev/input`).
    static var nodeDirectory: String { get }
    /// What duplicate `add`s and `remove`s are matched by.
    var syspath: String { get }
    init(_ record: UdevRecord)
}

extension UdevDeviceKind {
    public static var attributes: [String] { [] }
    public static var nodeDirectory: String { "/dev" }
}

/// A hotplug event for a node of kind `Device`.
public enum UdevEvent<Device: UdevDeviceKind>: Hashable, Sendable {
    /// Present at start (enumerated) or plugged in later.
    case added(Device)
    /// Gone.
    case removed(Device)
    /// Properties changed (`udevadm trigger`, a new rule).
    case changed(Device)
    /// Every device present at start has been reported (once, after the enumeration).
    case enumerated
}

/// Where hotplug events come from.
public enum UdevEventSource: String, Sendable {
    /// udevd's netlink group: events after the rules ran, with their properties.
    case udev
    /// The kernel's netlink group: used when udevd is not running (containers, minimal
    /// images); no `ID_*` properties, no `/dev/…/by-id` links.
    case kernel

    /// `udev` when udevd is running (`/run/udev/control` exists), else `kernel`.
    public static var automatic: UdevEventSource {
        access("/run/udev/control", F_OK) == 0 ? .udev : .kernel
    }
}

/// Watches one subsystem: the monitor is created and listening before the existing devices
/// are enumerated, so a device plugged in meanwhile is seen (possibly twice: the duplicate
/// `add` is dropped here).
///
/// `UdevMonitor<UdevInputDevice>` (``UdevInputMonitor``) follows evdev nodes,
/// `UdevMonitor<UdevVideoDevice>` (``UdevVideoMonitor``) V4L2 nodes.
public final class UdevMonitor<Device: UdevDeviceKind>: Sendable {
    /// The libudev contexts. libudev is not thread-safe: they are used only inside
    /// `state.withLock`, which makes handing them between threads sound.
    private struct Handles: @unchecked Sendable {
        var udev: OpaquePointer?
        var monitor: OpaquePointer?
    }
    private struct State: ~Copyable, Sendable {
        var handles: Handles
        /// The devices reported and not removed, by syspath.
        var known: [String: Device] = [:]
        var registration: (loop: IOLoop, token: IOToken)?
        /// Times the socket's buffer overflowed (ENOBUFS) and the subsystem was enumerated again.
        var overflows = 0

        mutating func closeNow() {
            if let m = handles.monitor { udev_monitor_unref(m) }
            if let u = handles.udev { udev_unref(u) }
            handles = Handles()
        }
    }
    private let state: Mutex<State>
    public let source: UdevEventSource
    /// The monitor socket's receive buffer: room for a burst of hotplug events (a hub with
    /// a dozen devices, `udevadm trigger`) rather than the default ~200 KiB. Above
    /// `rmem_max` it takes CAP_NET_ADMIN (libudev falls back to SO_RCVBUFFORCE); an overflow
    /// is recovered from either way (``receiveAvailable()``).
    public static var defaultReceiveBufferSize: Int32 { 8 << 20 }

    private init(handles: Handles, source: UdevEventSource) {
        self.source = source
        state = Mutex(State(handles: handles))
    }

    deinit { state.withLock { $0.closeNow() } }

    /// Starts watching on `loop`. The stream yields `.added` for every existing node first,
    /// then `.enumerated`, then hotplug events as they come. Ending the stream (or ``stop()``) stops watching.
    /// `receiveBufferSize`: the socket's buffer (tests make it small to overflow it).
    public static func start(
        on loop: IOLoop, source: UdevEventSource = .automatic, receiveBufferSize: Int32 = defaultReceiveBufferSize
    ) throws(SystemError) -> (UdevMonitor, AsyncStream<UdevEvent<Device>>) {
        let subsystem = Device.subsystem
        guard let udev = udev_new() else { throw SystemError(errno: errno, context: "udev_new") }
        guard let monitor = udev_monitor_new_from_netlink(udev, source.rawValue) else {
            let e = errno
            udev_unref(udev)
            throw SystemError(errno: e, context: "opening the \(source.rawValue) netlink monitor for \(subsystem)")
        }
        var rc = udev_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nil)
        // Best effort: a smaller buffer only makes the ENOBUFS path below likelier.
        _ = udev_monitor_set_receive_buffer_size(monitor, receiveBufferSize)
        if rc >= 0 { rc = udev_monitor_enable_receiving(monitor) }
        guard rc >= 0 else {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            throw SystemError(errno: -rc, context: "starting the \(source.rawValue) netlink monitor for \(subsystem)")
        }
        let fd = udev_monitor_get_fd(monitor)
        let watcher = UdevMonitor(handles: Handles(udev: udev, monitor: monitor), source: source)
        let (stream, continuation) = AsyncStream.makeStream(of: UdevEvent<Device>.self)

        // Monitor first (above), then enumerate.
        let existing: [Device]
        do {
            existing = try watcher.state.withLock { s throws(SystemError) in
                let list = try enumerate(s.handles.udev!)
                s.known = Dictionary(list.map { ($0.syspath, $0) }, uniquingKeysWith: { first, _ in first })
                return list
            }
        } catch {
            watcher.stop()
            throw error
        }
        for device in existing { continuation.yield(.added(device)) }
        continuation.yield(.enumerated)

        let token: IOToken
        do {
            token = try loop.register(
                fd: fd,
                // Strong captures: the monitor lives until its registration is removed.
                handler: { _ in
                    for event in watcher.receiveAvailable() { continuation.yield(event) }
                },
                onRemove: {
                    // On the I/O thread after the last handler call: safe to free the monitor.
                    watcher.state.withLock { s in
                        s.registration = nil
                        s.closeNow()
                    }
                    continuation.finish()
                })
        } catch {
            watcher.stop()
            throw error.doing("watching the udev monitor for \(subsystem)")
        }
        watcher.state.withLock { $0.registration = (loop, token) }
        continuation.onTermination = { [weak watcher] _ in watcher?.stop() }
        return (watcher, stream)
    }

    /// Times the monitor's buffer overflowed and was made good by a new enumeration.
    public var overflowCount: Int { state.withLock { $0.overflows } }

    /// Stops watching and frees the monitor (on the I/O thread when registered).
    public func stop() {
        let registration = state.withLock { s -> (loop: IOLoop, token: IOToken)? in
            guard let r = s.registration else {
                s.closeNow()
                return nil
            }
            return r
        }
        if let registration { registration.loop.remove(registration.token) }
    }

    /// Reads every waiting monitor message (the socket is non-blocking). When the socket's
    /// buffer overflowed (ENOBUFS: the kernel dropped messages, which ones is unknowable),
    /// the subsystem is enumerated again once the rest is read, and the difference is
    /// reported (``resync(known:present:)``): no device is missed or left behind.
    func receiveAvailable() -> [UdevEvent<Device>] {
        state.withLock { s in
            guard let monitor = s.handles.monitor, let udev = s.handles.udev else { return [] }
            var out: [UdevEvent<Device>] = []
            var overflowed = false
            while true {
                errno = 0
                guard let dev = udev_monitor_receive_device(monitor) else {
                    // NULL: nothing left (EAGAIN), a message filtered out or bad, or ENOBUFS
                    // (reported once per overflow; the messages after it still come).
                    if errno == ENOBUFS {
                        overflowed = true
                        continue
                    }
                    break
                }
                defer { udev_device_unref(dev) }
                let action = udev_device_get_action(dev).map { String(cString: $0) } ?? "add"
                // A removed device's sysfs directory is gone: no attributes to read.
                guard let device = Self.device(dev, readAttributes: action != "remove") else { continue }
                switch action {
                case "add":
                    if s.known.updateValue(device, forKey: device.syspath) == nil { out.append(.added(device)) }
                case "remove":
                    if s.known.removeValue(forKey: device.syspath) != nil { out.append(.removed(device)) }
                default:
                    if s.known[device.syspath] != nil {
                        s.known[device.syspath] = device
                        out.append(.changed(device))
                    } else if action == "change" || action == "bind" {
                        s.known[device.syspath] = device
                        out.append(.added(device))
                    }
                }
            }
            // An enumeration that fails leaves the known set as it is; the next overflow (or
            // the next event for a device) sets it right.
            if overflowed { s.overflows += 1 }
            if overflowed, let present = try? Self.enumerate(udev) {
                let (events, known) = Self.resync(known: s.known, present: present)
                out += events
                s.known = known
            }
            return out
        }
    }

    /// What messages lost to an overflow would have said: `.removed` for each known device
    /// that is no longer present, `.added` for each present one not known, `.changed` for a
    /// known one whose properties or attributes differ. Returns the new known set too.
    static func resync(known: [String: Device], present: [Device]) -> (events: [UdevEvent<Device>], known: [String: Device]) {
        let now = Dictionary(present.map { ($0.syspath, $0) }, uniquingKeysWith: { first, _ in first })
        var events: [UdevEvent<Device>] = known.keys.sorted().filter { now[$0] == nil }.map { .removed(known[$0]!) }
        for device in present {
            if let before = known[device.syspath] {
                if before != device { events.append(.changed(device)) }
            } else {
                events.append(.added(device))
            }
        }
        return (events, now)
    }

    /// The nodes present now (no monitor): for one-shot listings.
    public static func enumerateNow() throws(SystemError) -> [Device] {
        guard let udev = udev_new() else { throw SystemError(errno: errno, context: "udev_new") }
        defer { udev_unref(udev) }
        return try enumerate(udev)
    }

    private static func enumerate(_ udev: OpaquePointer) throws(SystemError) -> [Device] {
        guard let en = udev_enumerate_new(udev) else { throw SystemError(errno: errno, context: "udev_enumerate_new") }
        defer { udev_enumerate_unref(en) }
        _ = udev_enumerate_add_match_subsystem(en, Device.subsystem)
        _ = udev_enumerate_add_match_sysname(en, Device.sysnamePrefix + "*")
        let rc = udev_enumerate_scan_devices(en)
        guard rc >= 0 else { throw SystemError(errno: -rc, context: "enumerating \(Device.subsystem) devices") }
        var result: [(Int, Device)] = []
        var entry = udev_enumerate_get_list_entry(en)
        while let e = entry {
            defer { entry = udev_list_entry_get_next(e) }
            guard let path = udev_list_entry_get_name(e),
                let dev = udev_device_new_from_syspath(udev, path)
            else { continue }
            defer { udev_device_unref(dev) }
            if let record = record(dev, readAttributes: true) {
                result.append((nodeNumber(record.sysname), Device(record)))
            }
        }
        return result.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// The number that ends a sysname (`event12` → 12), for a stable order.
    private static func nodeNumber(_ sysname: String) -> Int {
        Int(String(sysname.reversed().prefix { $0.isNumber }.reversed())) ?? Int.max
    }

    private static func device(_ dev: OpaquePointer, readAttributes: Bool) -> Device? {
        record(dev, readAttributes: readAttributes).map(Device.init)
    }

    /// A node of the wanted kind (sysname prefix and a device node), or nil.
    private static func record(_ dev: OpaquePointer, readAttributes: Bool) -> UdevRecord? {
        guard let sysname = udev_device_get_sysname(dev).map({ String(cString: $0) }),
            sysname.hasPrefix(Device.sysnamePrefix),
            let syspath = udev_device_get_syspath(dev).map({ String(cString: $0) })
        else { return nil }
        var properties: [String: String] = [:]
        var entry = udev_device_get_properties_list_entry(dev)
        while let e = entry {
            if let name = udev_list_entry_get_name(e) {
                properties[String(cString: name)] = udev_list_entry_get_value(e).map { String(cString: $0) } ?? ""
            }
            entry = udev_list_entry_get_next(e)
        }
        var attributes: [String: String] = [:]
        if readAttributes {
            for name in Device.attributes {
                guard let value = udev_device_get_sysattr_value(dev, name) else { continue }
                var text = String(cString: value)
                while text.last == "\n" || text.last == " " { text.removeLast() }
                attributes[name] = text
            }
        }
        let node = udev_device_get_devnode(dev).map { String(cString: $0) } ?? "\(Device.nodeDirectory)/\(sysname)"
        return UdevRecord(node: node, syspath: syspath, sysname: sysname, properties: properties, attributes: attributes)
    }
}
