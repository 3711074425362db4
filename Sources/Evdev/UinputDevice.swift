#if canImport(Glibc)
import LinuxIO
import Glibc
#endif
import CLibevdev
import CLinuxShims
import Synchronization
import Vocabulary

/// A kernel input device made from a ``DeviceDescription`` through `/dev/uinput`, for tests
/// and benchmarks: what it writes comes out of its `/dev/input/eventN` node like from
/// hardware. Destroyed on ``destroy()`` or deinit.
public final class UinputDevice: Sendable {
    /// `/dev/input/eventN`.
    public let node: String
    /// `/sys/devices/virtual/input/inputN`.
    public let syspath: String

    /// libevdev's uinput handle; only used under `handle`'s lock.
    private struct Handle: @unchecked Sendable {
        var uinput: OpaquePointer?
        /// Our own `/dev/uinput` descriptor when we opened it (to set `phys`); -1 when
        /// libevdev manages its own.
        var fd: Int32 = -1
    }
    private let handle: Mutex<Handle>

    /// Creates the device. `autorepeat: false` leaves `EV_REP` out, so the kernel does not
    /// add its own repeat events to keys held longer than 250 ms.
    public init(_ description: DeviceDescription, autorepeat: Bool = true) throws(EvdevError) {
        guard let dev = libevdev_new() else { throw EvdevError(code: .failed, context: "libevdev_new") }
        defer { libevdev_free(dev) }
        libevdev_set_name(dev, description.name)
        libevdev_set_id_bustype(dev, Int32(description.bus.rawValue))
        libevdev_set_id_vendor(dev, Int32(description.vendor))
        libevdev_set_id_product(dev, Int32(description.product))
        libevdev_set_id_version(dev, Int32(description.version))
        if let uniq = description.uniq { libevdev_set_uniq(dev, uniq) }
        if let phys = description.phys { libevdev_set_phys(dev, phys) }
        for p in description.properties { libevdev_enable_property(dev, UInt32(p)) }
        for code in description.codes.sorted() {
            let rc: Int32
            switch code.type {
            case .abs:
                let a = description.absInfo[code.code] ?? AbsInfo(minimum: 0, maximum: 0)
                var info = input_absinfo(
                    value: a.value, minimum: a.minimum, maximum: a.maximum, fuzz: a.fuzz, flat: a.flat,
                    resolution: a.resolution)
                rc = libevdev_enable_event_code(dev, UInt32(code.type.rawValue), UInt32(code.code), &info)
            case .rep:
                guard autorepeat else { continue }
                // REP_DELAY / REP_PERIOD take their value as data: the kernel defaults.
                var value: Int32 = code.code == 0 ? 250 : 33
                rc = libevdev_enable_event_code(dev, UInt32(code.type.rawValue), UInt32(code.code), &value)
            default:
                rc = libevdev_enable_event_code(dev, UInt32(code.type.rawValue), UInt32(code.code), nil)
            }
            guard rc == 0 else {
                throw EvdevError(code: .failed, context: "enabling \(code.name) for uinput device \"\(description.name)\"")
            }
        }
        // libevdev does not pass `phys` on to uinput: set it with UI_SET_PHYS on a descriptor
        // of our own before libevdev creates the device on it.
        var fd: Int32 = -1
        if let phys = description.phys, !phys.isEmpty {
            fd = open("/dev/uinput", O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { throw EvdevError(errno: errno, context: "opening /dev/uinput") }
            let failed: Int32? = phys.withCString { p in
                do throws(SystemError) {
                    _ = try retryingEINTR { evc_ioctl(fd, EVC_UI_SET_PHYS, UnsafeMutableRawPointer(mutating: p)) }
                    return nil
                } catch {
                    return error.errno
                }
            }
            if let failed {
                close(fd)
                throw EvdevError(errno: failed, context: "setting phys \"\(phys)\" of uinput device \"\(description.name)\"")
            }
        }
        var uinput: OpaquePointer?
        let rc = libevdev_uinput_create_from_device(dev, fd >= 0 ? fd : LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue, &uinput)
        guard rc == 0, let uinput else {
            if fd >= 0 { close(fd) }
            throw EvdevError(errno: -rc, context: "creating uinput device \"\(description.name)\" (/dev/uinput)")
        }
        guard let nodePointer = libevdev_uinput_get_devnode(uinput), let sysPointer = libevdev_uinput_get_syspath(uinput) else {
            libevdev_uinput_destroy(uinput)
            if fd >= 0 { close(fd) }
            throw EvdevError(code: .failed, context: "finding the event node of uinput device \"\(description.name)\"")
        }
        node = String(cString: nodePointer)
        syspath = String(cString: sysPointer)
        handle = Mutex(Handle(uinput: uinput, fd: fd))
    }

    deinit { destroy() }

    /// Writes one event (its time is set by the kernel).
    public func write(_ type: EventType, _ code: UInt16, _ value: Int32) throws(EvdevError) {
        let rc = handle.withLock { h -> Int32 in
            guard let u = h.uinput else { return -ENODEV }
            return libevdev_uinput_write_event(u, UInt32(type.rawValue), UInt32(code), value)
        }
        guard rc == 0 else { throw EvdevError(errno: -rc, context: "writing to uinput device \(node)") }
    }

    /// Writes events in order (their times are ignored; the kernel stamps them).
    public func write(_ events: [InputEvent]) throws(EvdevError) {
        for e in events { try write(e.type, e.code, e.value) }
    }

    /// Writes one frame: the events, then `SYN_REPORT`.
    public func writeFrame(_ events: [InputEvent]) throws(EvdevError) {
        try write(events)
        try write(.syn, 0, 0)
    }

    /// The events the kernel sent to the device since the last call, with their kernel
    /// times: `EV_LED` when its LED class device's brightness is written, for instance.
    /// Never blocks.
    public func receivedEvents() -> [InputEvent] {
        handle.withLock { h -> [InputEvent] in
            guard let u = h.uinput else { return [] }
            let fd = libevdev_uinput_get_fd(u)
            var out: [InputEvent] = []
            var e = input_event()
            while true {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 0) == 1 else { return out }
                guard withUnsafeMutableBytes(of: &e, { read(fd, $0.baseAddress, $0.count) }) == MemoryLayout<input_event>.size else {
                    return out
                }
                out.append(
                    InputEvent(
                        time: Timestamp(seconds: Int(evc_input_event_sec(&e)), microseconds: Int(evc_input_event_usec(&e))),
                        type: EventType(e.type), code: e.code, value: e.value))
            }
        }
    }

    /// Removes the device from the kernel (readers get ENODEV / EPOLLHUP).
    public func destroy() {
        handle.withLock { h in
            if let u = h.uinput { libevdev_uinput_destroy(u) }
            h.uinput = nil
            // libevdev closes only descriptors it opened itself.
            if h.fd >= 0 { close(h.fd) }
            h.fd = -1
        }
    }
}
