#if canImport(Glibc)
import Glibc
#endif
import CLibevdev
import CLinuxShims
import LinuxIO
import Synchronization
import Vocabulary

/// An open evdev node read through libevdev.
///
/// All libevdev calls go through one mutex, so the I/O thread (reading) and other threads
/// (grab, key state, close) never use the libevdev context at the same time.
public final class EvdevDevice: Sendable {
    public let node: String
    /// Name, ids and capabilities as the kernel reports them at open time.
    public let description: DeviceDescription

    /// The libevdev context. libevdev is not thread-safe; this is only touched inside
    /// `state.withLock`, which is why sending it between threads is sound.
    private struct Context: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private struct State: ~Copyable, Sendable {
        var fd: Int32
        var context: Context?
        var dev: OpaquePointer? { context?.pointer }
        var grabbed = false
        var grabWanted = false
        var registration: (loop: IOLoop, token: IOToken)?
        var partial: [InputEvent] = []

        mutating func closeNow() {
            if let dev { libevdev_free(dev) }
            context = nil
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }
    private let state: Mutex<State>

    private init(node: String, fd: Int32, dev: OpaquePointer, description: DeviceDescription) {
        self.node = node
        self.description = description
        state = Mutex(State(fd: fd, context: Context(pointer: dev)))
    }

    deinit {
        state.withLock { $0.closeNow() }
    }

    /// Opens `node` (`O_RDONLY | O_NONBLOCK | O_CLOEXEC`), reads its description and sets
    /// its clock to CLOCK_MONOTONIC, so event times compare with `clock_gettime`.
    public static func open(_ node: String) throws(EvdevError) -> EvdevDevice {
        let fd: Int32
        do {
            fd = try retryingEINTR { Glibc.open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }
        } catch {
            throw EvdevError(errno: error.errno, context: "opening \(node)")
        }
        var dev: OpaquePointer?
        let rc = libevdev_new_from_fd(fd, &dev)
        guard rc == 0, let dev else {
            Glibc.close(fd)
            throw EvdevError(errno: -rc, context: "reading the description of \(node)")
        }
        let clockRC = libevdev_set_clock_id(dev, CLOCK_MONOTONIC)
        guard clockRC == 0 else {
            libevdev_free(dev)
            Glibc.close(fd)
            throw EvdevError(errno: -clockRC, context: "setting CLOCK_MONOTONIC on \(node)")
        }
        return EvdevDevice(node: node, fd: fd, dev: dev, description: describe(dev))
    }

    /// Opens `node`, retrying while it answers EACCES/EPERM: right after hotplug udev may
    /// not have applied its permissions yet. Waits 50 ms, then doubles, for at most
    /// `patience` in total; then throws the permission error with a hint.
    public static func open(_ node: String, patience: Duration) async throws(EvdevError) -> EvdevDevice {
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var delay = Duration.milliseconds(50)
        while true {
            do {
                return try open(node)
            } catch  where error.code == .permissionDenied {
                let now = clock.now
                if now >= deadline || Task.isCancelled {
                    var e = error
                    e.context +=
                        " (still denied after \(patience); check the udev rules in udev-rules/ and that the user is in the group they name)"
                    throw e
                }
                do {
                    try await Task.sleep(for: min(delay, deadline - now))
                } catch {
                    throw EvdevError(code: .failed, context: "opening \(node): cancelled while waiting for access")
                }
                delay *= 2
            }
        }
    }

    // MARK: - Reading

    /// Reads what is waiting, until EAGAIN, without blocking. Usable directly in tests.
    public func readAvailable() -> [DeviceInput] {
        var out: [DeviceInput] = []
        while !readSome(into: &out, stopAfterFrame: false) {}
        return out
    }

    /// Reads until EAGAIN, or (`stopAfterFrame`) until one frame is complete: the I/O
    /// thread's handler then hands that frame on at once, before the read that finds the
    /// device empty. Returns true when nothing more is to be read now (EAGAIN, or removed).
    private func readSome(into out: inout [DeviceInput], stopAfterFrame: Bool) -> Bool {
        state.withLock { s -> Bool in
            guard let dev = s.dev else {
                out.append(.removed(EvdevError(code: .deviceRemoved, context: "reading \(node): already closed")))
                return true
            }
            var ev = input_event()
            while true {
                let rc = retryingNegativeErrno { libevdev_next_event(dev, LIBEVDEV_READ_FLAG_NORMAL.rawValue, &ev) }
                if rc == -EAGAIN { break }
                if rc == LIBEVDEV_READ_STATUS_SUCCESS.rawValue {
                    let e = InputEvent(ev)
                    if e.isSynReport {
                        out.append(.frame(Frame(events: s.partial, time: e.time, reportValue: e.value)))
                        s.partial = []
                        if stopAfterFrame { return false }
                    } else {
                        s.partial.append(e)
                    }
                    continue
                }
                if rc == LIBEVDEV_READ_STATUS_SYNC.rawValue {
                    // SYN_DROPPED: what was read of this frame is incomplete; drop it and
                    // take libevdev's state difference instead.
                    s.partial = []
                    let dropTime = InputEvent(ev).time
                    var delta: [InputEvent] = []
                    var syncRC: Int32
                    repeat {
                        syncRC = retryingNegativeErrno { libevdev_next_event(dev, LIBEVDEV_READ_FLAG_SYNC.rawValue, &ev) }
                        if syncRC == LIBEVDEV_READ_STATUS_SYNC.rawValue {
                            let e = InputEvent(ev)
                            if !e.isSynReport { delta.append(e) }
                        }
                    } while syncRC == LIBEVDEV_READ_STATUS_SYNC.rawValue
                    if syncRC == -ENODEV {
                        out.append(.removed(nil))
                        return true
                    }
                    var changed: [EventCode: Bool] = [:]
                    for e in delta where e.type == .key { changed[e.eventCode] = e.value != 0 }
                    let time = delta.last?.time ?? dropTime
                    out.append(.frame(Frame(events: delta, time: time, resync: Resync(changedKeys: changed, keysDown: keysDown(dev)))))
                    if stopAfterFrame { return false }
                    continue
                }
                if rc == -ENODEV {
                    out.append(.removed(nil))
                    return true
                }
                out.append(.removed(EvdevError(errno: -rc, context: "reading \(node)")))
                return true
            }
            if s.grabWanted && !s.grabbed && keysDown(dev).isEmpty {
                grabNow(&s)
            }
            return true
        }
    }

    private func keysDown(_ dev: OpaquePointer) -> Set<EventCode> {
        var down: Set<EventCode> = []
        for code in description.codes where code.type == .key {
            if libevdev_get_event_value(dev, UInt32(EventType.key.rawValue), UInt32(code.code)) != 0 { down.insert(code) }
        }
        return down
    }

    /// Keys down as far as libevdev knows (updated by reading).
    public var keysDown: Set<EventCode> {
        state.withLock { s in s.dev.map { keysDown($0) } ?? [] }
    }

    /// Reads on `loop`: each time the node is readable the I/O thread reads until EAGAIN
    /// and calls `handler` with each item, on that thread, each frame as soon as it is
    /// complete (no hop: the fastest way from the kernel to a handler). After `.removed` nothing follows and the node is closed.
    /// ``close()`` stops watching and closes the node; `onEnd` then runs (on the I/O
    /// thread), as it does after `.removed`.
    public func read(
        on loop: IOLoop, handler: @escaping @Sendable (DeviceInput) -> Void, onEnd: @escaping @Sendable () -> Void = {}
    ) throws(EvdevError) {
        let fd = state.withLock { $0.fd }
        guard fd >= 0 else { throw EvdevError(code: .deviceRemoved, context: "watching \(node): already closed") }
        let token: IOToken
        do {
            token = try loop.register(
                fd: fd,
                // Strong captures: a watched device stays alive until its registration is
                // removed (close(), removal or loop stop), which breaks the cycle.
                handler: { readiness in
                    // Frame by frame: each is handed on as soon as it is complete, before
                    // the read that finds the device empty (one syscall less between the
                    // kernel's event and the handler).
                    var items: [DeviceInput] = []
                    var drained = false
                    while !drained {
                        items.removeAll(keepingCapacity: true)
                        drained = self.readSome(into: &items, stopAfterFrame: true)
                        if drained, readiness.contains(.hangup) || readiness.contains(.error),
                            !items.contains(where: { if case .removed = $0 { true } else { false } })
                        {
                            items.append(.removed(nil))
                        }
                        for item in items {
                            handler(item)
                            if case .removed = item {
                                self.close()
                                return
                            }
                        }
                    }
                },
                onRemove: {
                    // Runs on the I/O thread after the handler's last call: closing here
                    // cannot race with a read on the same descriptor.
                    self.state.withLock { s in
                        s.registration = nil
                        s.closeNow()
                    }
                    onEnd()
                })
        } catch {
            throw EvdevError(errno: error.errno, context: "watching \(node)")
        }
        state.withLock { $0.registration = (loop, token) }
    }

    /// Reads on `loop` (see ``read(on:handler:onEnd:)``) into a stream, for consumers
    /// that are tasks. The stream ends after `.removed`; ending it (or ``close()``) stops
    /// watching and closes the node.
    public func inputs(on loop: IOLoop) throws(EvdevError) -> AsyncStream<DeviceInput> {
        let (stream, continuation) = AsyncStream.makeStream(of: DeviceInput.self)
        try read(
            on: loop,
            handler: { item in
                continuation.yield(item)
                if case .removed = item { continuation.finish() }
            },
            onEnd: { continuation.finish() })
        continuation.onTermination = { [weak self] _ in self?.close() }
        return stream
    }

    /// Stops reading and closes the node (after releasing a grab). When the node is watched
    /// by an ``IOLoop`` the close happens on the I/O thread, after the last read.
    public func close() {
        let registration = state.withLock { s -> (loop: IOLoop, token: IOToken)? in
            if s.grabbed { ungrabNow(&s) }
            s.grabWanted = false
            guard let r = s.registration else {
                s.closeNow()
                return nil
            }
            return r
        }
        if let registration { registration.loop.remove(registration.token) }
    }

    // MARK: - Grab (docs/behaviour.md#grabs-and-event-delivery)

    /// Asks for an exclusive grab (`EVIOCGRAB`). It happens now if no key of the device is
    /// down, otherwise after the read that sees the last key released, so the system never
    /// sees a press without its release.
    public func grabWhenIdle() {
        state.withLock { s in
            s.grabWanted = true
            if !s.grabbed, let dev = s.dev, keysDown(dev).isEmpty { grabNow(&s) }
        }
    }

    /// Releases the grab (or a pending request for one).
    public func releaseGrab() {
        state.withLock { s in
            s.grabWanted = false
            if s.grabbed { ungrabNow(&s) }
        }
    }

    /// Whether the device is grabbed now.
    public var isGrabbed: Bool { state.withLock { $0.grabbed } }

    private func grabNow(_ s: inout State) {
        guard let dev = s.dev else { return }
        // A failed grab (another program holds one: EBUSY) leaves the device shared; the
        // request stays and is retried after the next read.
        s.grabbed = libevdev_grab(dev, LIBEVDEV_GRAB) == 0
    }

    private func ungrabNow(_ s: inout State) {
        if let dev = s.dev { _ = libevdev_grab(dev, LIBEVDEV_UNGRAB) }
        s.grabbed = false
    }

    /// What the kernel hands this handle of the device's events (`EVIOCSMASK`). What is
    /// not delivered is never queued and never wakes the reader (a mouse moved, a keyboard
    /// typed on); `SYN_DROPPED` still comes. Other handles (the desktop's) are not affected.
    /// What came meanwhile is not brought back, and ``keysDown`` does not know of keys that
    /// were not delivered.
    public func deliver(_ delivery: EventDelivery) throws(EvdevError) {
        let fd = state.withLock { $0.fd }
        var types: UInt64 = 0
        var keys = [UInt64](repeating: ~0, count: Self.keyMaskWords)
        switch delivery {
        case .all:
            types = ~0
        case .none:
            break
        case .keys(let codes):
            for t in [EventType.syn, .key, .rel, .abs, .sw] { types |= 1 << UInt64(t.rawValue) }
            keys = [UInt64](repeating: 0, count: Self.keyMaskWords)
            for c in codes where c.type == .key && Int(c.code) < Self.keyMaskWords * 64 {
                keys[Int(c.code) / 64] |= 1 << UInt64(c.code % 64)
            }
        }
        let keyBits = keys, typeBits = [types]
        do {
            // The key codes first: a device going from all to some keys never delivers a
            // key it should not, whatever comes between the two calls.
            _ = try retryingEINTR { evc_evdev_set_mask(fd, UInt32(EventType.key.rawValue), keyBits, UInt32(keyBits.count * 8)) }
            _ = try retryingEINTR { evc_evdev_set_mask(fd, 0, typeBits, UInt32(typeBits.count * 8)) }
        } catch {
            throw EvdevError(errno: error.errno, context: "choosing the events of \(node) (EVIOCSMASK)")
        }
    }

    /// 64-bit words of a key code bitmap (`KEY_CNT` bits).
    private static let keyMaskWords = (Int(KEY_CNT) + 63) / 64

    // MARK: - Description

    private static func describe(_ dev: OpaquePointer) -> DeviceDescription {
        func string(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        var codes: Set<EventCode> = []
        var absInfo: [UInt16: AbsInfo] = [:]
        for t in 0...Int(EventType.max.rawValue) {
            let type = EventType(UInt16(t))
            guard libevdev_has_event_type(dev, UInt32(t)) != 0, type.maxCode >= 0 else { continue }
            if type == .syn {
                // libevdev answers yes for every EV_SYN code; list the ones a device can
                // really send, as evemu-record does (SYN_REPORT, SYN_CONFIG, SYN_DROPPED).
                codes.formUnion([.synReport, EventCode(.syn, 1), .synDropped])
                continue
            }
            for c in 0...type.maxCode where libevdev_has_event_code(dev, UInt32(t), UInt32(c)) != 0 {
                codes.insert(EventCode(type, UInt16(c)))
                if type == .abs, let a = libevdev_get_abs_info(dev, UInt32(c)) {
                    absInfo[UInt16(c)] = AbsInfo(
                        value: a.pointee.value, minimum: a.pointee.minimum, maximum: a.pointee.maximum,
                        fuzz: a.pointee.fuzz, flat: a.pointee.flat, resolution: a.pointee.resolution)
                }
            }
        }
        var properties: Set<UInt16> = []
        for p in 0..<0x20 where libevdev_has_property(dev, UInt32(p)) != 0 { properties.insert(UInt16(p)) }
        return DeviceDescription(
            name: string(libevdev_get_name(dev)) ?? "",
            bus: BusType(rawValue: UInt16(truncatingIfNeeded: libevdev_get_id_bustype(dev))),
            vendor: UInt16(truncatingIfNeeded: libevdev_get_id_vendor(dev)),
            product: UInt16(truncatingIfNeeded: libevdev_get_id_product(dev)),
            version: UInt16(truncatingIfNeeded: libevdev_get_id_version(dev)),
            uniq: string(libevdev_get_uniq(dev)), phys: string(libevdev_get_phys(dev)),
            codes: codes, absInfo: absInfo, properties: properties)
    }
}

extension InputEvent {
    init(_ ev: input_event) {
        var copy = ev
        let sec = evc_input_event_sec(&copy), usec = evc_input_event_usec(&copy)
        self.init(
            time: Timestamp(seconds: Int(sec), microseconds: Int(usec)), type: EventType(ev.type), code: ev.code,
            value: ev.value)
    }
}
