#if canImport(Glibc)
import Glibc
#endif
import CLibudev
import IOLoop
import Synchronization

/// A failed libudev call, with what was being done.
public struct UdevError: Error, Hashable, Sendable, CustomStringConvertible {
    public var errno: Int32?
    public var context: String
    public init(errno: Int32?, context: String) {
        self.errno = errno
        self.context = context
    }
    public var description: String {
        guard let errno, errno != 0 else { return context }
        return "\(context): \(String(cString: strerror(errno)).lowercased())"
    }
}

/// One evdev node as udev (or the kernel) describes it.
public struct UdevInputDevice: Hashable, Sendable {
    /// `/dev/input/eventN`.
    public var node: String
    /// `/sys/devices/.../input/inputM/eventN`.
    public var syspath: String
    /// Every property: `ID_INPUT_KEY`, `ID_INPUT_KEYBOARD`, `EVCAPTURE_ROLE`, `DEVNAME`, ...
    /// Without udevd only the kernel's (`DEVNAME`, `MAJOR`, `MINOR`, ...).
    public var properties: [String: String]

    public init(node: String, syspath: String, properties: [String: String]) {
        self.node = node
        self.syspath = syspath
        self.properties = properties
    }

    /// The `EVCAPTURE_ROLE` property set by `udev-rules/`, if any.
    public var role: String? { properties["EVCAPTURE_ROLE"] }
    /// `ID_INPUT_*` flags that are set (`ID_INPUT_KEY`, `ID_INPUT_MOUSE`, ...).
    public var inputClasses: Set<String> {
        Set(properties.filter { $0.key.hasPrefix("ID_INPUT_") && $0.value == "1" }.keys)
    }
}

/// A hotplug event for an evdev node.
public enum UdevInputEvent: Hashable, Sendable {
    /// Present at start (enumerated) or plugged in later.
    case added(UdevInputDevice)
    /// Gone.
    case removed(UdevInputDevice)
    /// Properties changed (`udevadm trigger`, a new rule).
    case changed(UdevInputDevice)
    /// Every device present at start has been reported (once, after the enumeration).
    case enumerated
}

/// Where hotplug events come from.
public enum UdevEventSource: String, Sendable {
    /// udevd's netlink group: events after the rules ran, with their properties.
    case udev
    /// The kernel's netlink group: used when udevd is not running (containers, minimal
    /// images); no `ID_INPUT_*` or `EVCAPTURE_ROLE`, so roles come from capabilities only.
    case kernel

    /// `udev` when udevd is running (`/run/udev/control` exists), else `kernel`.
    public static var automatic: UdevEventSource {
        access("/run/udev/control", F_OK) == 0 ? .udev : .kernel
    }
}

/// Watches the input subsystem: the monitor is created and listening before the existing
/// devices are enumerated, so a device plugged in meanwhile is seen (possibly twice: the
/// duplicate `add` is dropped here).
public final class UdevInputMonitor: Sendable {
    /// The libudev contexts. libudev is not thread-safe: they are used only inside
    /// `state.withLock`, which makes handing them between threads sound.
    private struct Handles: @unchecked Sendable {
        var udev: OpaquePointer?
        var monitor: OpaquePointer?
    }
    private struct State: ~Copyable, Sendable {
        var handles: Handles
        var known: Set<String> = []
        var registration: (loop: IOLoop, token: IOToken)?

        mutating func closeNow() {
            if let m = handles.monitor { udev_monitor_unref(m) }
            if let u = handles.udev { udev_unref(u) }
            handles = Handles()
        }
    }
    private let state: Mutex<State>
    public let source: UdevEventSource

    private init(handles: Handles, source: UdevEventSource) {
        self.source = source
        state = Mutex(State(handles: handles))
    }

    deinit { state.withLock { $0.closeNow() } }

    /// Starts watching on `loop`. The stream yields `.added` for every existing node first,
    /// then `.enumerated`, then hotplug events as they come. Ending the stream (or ``stop()``) stops watching.
    public static func start(on loop: IOLoop, source: UdevEventSource = .automatic)
        throws(UdevError) -> (UdevInputMonitor, AsyncStream<UdevInputEvent>)
    {
        guard let udev = udev_new() else { throw UdevError(errno: errno, context: "udev_new") }
        guard let monitor = udev_monitor_new_from_netlink(udev, source.rawValue) else {
            let e = errno
            udev_unref(udev)
            throw UdevError(errno: e, context: "opening the \(source.rawValue) netlink monitor")
        }
        var rc = udev_monitor_filter_add_match_subsystem_devtype(monitor, "input", nil)
        if rc >= 0 { rc = udev_monitor_enable_receiving(monitor) }
        guard rc >= 0 else {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            throw UdevError(errno: -rc, context: "starting the \(source.rawValue) netlink monitor")
        }
        let fd = udev_monitor_get_fd(monitor)
        let watcher = UdevInputMonitor(handles: Handles(udev: udev, monitor: monitor), source: source)
        let (stream, continuation) = AsyncStream.makeStream(of: UdevInputEvent.self)

        // Monitor first (above), then enumerate.
        let existing: [UdevInputDevice]
        do {
            existing = try watcher.state.withLock { s throws(UdevError) in
                let list = try enumerate(s.handles.udev!)
                s.known = Set(list.map(\.syspath))
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
            throw UdevError(errno: error.errno, context: "watching the udev monitor")
        }
        watcher.state.withLock { $0.registration = (loop, token) }
        continuation.onTermination = { [weak watcher] _ in watcher?.stop() }
        return (watcher, stream)
    }

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

    /// Reads every waiting monitor message (the socket is non-blocking).
    func receiveAvailable() -> [UdevInputEvent] {
        state.withLock { s in
            guard let monitor = s.handles.monitor else { return [] }
            var out: [UdevInputEvent] = []
            while let dev = udev_monitor_receive_device(monitor) {
                defer { udev_device_unref(dev) }
                guard let device = Self.inputDevice(dev) else { continue }
                let action = udev_device_get_action(dev).map { String(cString: $0) } ?? "add"
                switch action {
                case "add":
                    if s.known.insert(device.syspath).inserted { out.append(.added(device)) }
                case "remove":
                    if s.known.remove(device.syspath) != nil { out.append(.removed(device)) }
                default:
                    if s.known.contains(device.syspath) { out.append(.changed(device)) }
                    else if action == "change" || action == "bind" {
                        s.known.insert(device.syspath)
                        out.append(.added(device))
                    }
                }
            }
            return out
        }
    }

    /// The evdev nodes present now (no monitor): for one-shot listings.
    public static func enumerateNow() throws(UdevError) -> [UdevInputDevice] {
        guard let udev = udev_new() else { throw UdevError(errno: errno, context: "udev_new") }
        defer { udev_unref(udev) }
        return try enumerate(udev)
    }

    private static func enumerate(_ udev: OpaquePointer) throws(UdevError) -> [UdevInputDevice] {
        guard let en = udev_enumerate_new(udev) else { throw UdevError(errno: errno, context: "udev_enumerate_new") }
        defer { udev_enumerate_unref(en) }
        _ = udev_enumerate_add_match_subsystem(en, "input")
        _ = udev_enumerate_add_match_sysname(en, "event*")
        let rc = udev_enumerate_scan_devices(en)
        guard rc >= 0 else { throw UdevError(errno: -rc, context: "enumerating input devices") }
        var result: [UdevInputDevice] = []
        var entry = udev_enumerate_get_list_entry(en)
        while let e = entry {
            defer { entry = udev_list_entry_get_next(e) }
            guard let path = udev_list_entry_get_name(e),
                  let dev = udev_device_new_from_syspath(udev, path) else { continue }
            defer { udev_device_unref(dev) }
            if let device = inputDevice(dev) { result.append(device) }
        }
        return result.sorted { eventNumber($0.node) < eventNumber($1.node) }
    }

    private static func eventNumber(_ node: String) -> Int {
        Int(node.reversed().prefix { $0.isNumber }.reversed().map(String.init).joined()) ?? Int.max
    }

    /// An evdev node (`event*` with a device node), or nil for `input*`/`mouse*`/`js*`.
    private static func inputDevice(_ dev: OpaquePointer) -> UdevInputDevice? {
        guard let sysname = udev_device_get_sysname(dev).map({ String(cString: $0) }), sysname.hasPrefix("event"),
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
        let node = udev_device_get_devnode(dev).map { String(cString: $0) } ?? "/dev/input/\(sysname)"
        return UdevInputDevice(node: node, syspath: syspath, properties: properties)
    }
}
