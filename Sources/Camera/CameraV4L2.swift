#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import V4L2
import Udev

/// A real camera behind ``Capture/CameraBackend``: one identity, across unplug and replug.
///
/// It remembers the values set through it (the person's values, in the order they were
/// last set) so the session can put them back after a replug or after another program
/// reset them. While the camera is absent every call throws `.deviceRemoved`.
///
/// With ``writeOffThread(onFailure:onRefresh:)`` (the daemon's session does it) ``set(_:to:)`` checks
/// the value against the control's cached description, remembers it and hands it to a
/// ``ControlWriter`` thread for the ioctls, returning the value clamped and rounded to the
/// control's step: the knob path on the input thread never waits for the camera.
public final class V4L2Camera: CameraBackend {
    public let identity: String
    /// Set once, before the camera is shared (``writeOffThread(onFailure:onRefresh:)``).
    private let writer = Mutex<ControlWriter?>(nil)
    private let onWriteFailure = Mutex<(@Sendable (CameraError) -> Void)?>(nil)

    private struct State {
        var device: V4L2Device?
        /// Controls as last queried or reported by events.
        var descriptions: [ControlID: ControlDescription] = [:]
        /// The person's values; the order is the order of their last setting.
        var personValues: [(ControlID, Int64)] = []
        var subscribed: Set<ControlID> = []
        /// The last value known of each control: read, reported by a control event, or set.
        /// What ``value(of:)`` answers when the camera does not answer in time.
        var known: [ControlID: Int64] = [:]
        /// Values put back by ``reapply(only:)`` and not written yet: one the camera refuses
        /// as inactive is skipped quietly, as a re-apply without a writer thread does.
        var reapplying: [ControlID: Int64] = [:]
    }
    private let state = Mutex(State())

    init(identity: String) {
        self.identity = identity
    }

    deinit { writer.withLock { $0?.stop() } }

    /// From now on ``set(_:to:)`` writes on a thread of its own; a failed write is passed to
    /// `onFailure` (on that thread). ``requestRefresh()`` reads every control there and
    /// passes them to `onRefresh`.
    func writeOffThread(
        onFailure: @escaping @Sendable (CameraError) -> Void,
        onRefresh: @escaping @Sendable ([CameraControlInfo]) -> Void = { _ in }
    ) {
        onWriteFailure.withLock { $0 = onFailure }
        let w = ControlWriter(
            write: { [weak self] id, value in self?.write(id, value) },
            read: { [weak self] id in self?.readOnWriter(id) },
            refresh: { [weak self] in
                // Gone meanwhile: the session's replug path refreshes again.
                guard let self, var controls = try? self.controls() else { return }
                // Values queued while the camera was read are newer than its answer: a knob
                // turned meanwhile must not be reported back as a change made elsewhere.
                let queued = self.writer.withLock { $0 }?.pendingValues ?? [:]
                if !queued.isEmpty {
                    for i in controls.indices { if let v = queued[controls[i].id] { controls[i].value = v } }
                    self.state.withLock { s in for (id, v) in queued { s.known[id] = v } }
                }
                onRefresh(controls)
            })
        writer.withLock { $0 = w }
    }

    /// Reads every control anew on the writer's thread, after the values queued now, and
    /// hands them to ``writeOffThread(onFailure:onRefresh:)``'s `onRefresh`: a camera that
    /// stops answering holds that thread, not the caller's. Requests made while one is
    /// waiting are served by one read. Without a writer thread, nothing happens.
    func requestRefresh() {
        writer.withLock { $0 }?.requestRefresh()
    }

    /// Whether every value handed to the writer thread has been written.
    var writesDone: Bool { writer.withLock { $0?.isIdle ?? true } }

    /// Waits (polling, 1 ms) until ``writesDone`` or `timeout`; for tests and tools that
    /// look at the camera right after a set.
    @discardableResult
    public func waitForWrites(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !writesDone {
            if ContinuousClock.now >= deadline { return false }
            usleep(1000)
        }
        return true
    }

    /// The writer thread's ioctls, outside the state lock (a hung camera holds no lock the
    /// input path takes).
    private func write(_ id: ControlID, _ value: Int64) {
        guard
            let (device, label, reapplied) = state.withLock({ s in
                s.device.map { d in
                    let reapplied = s.reapplying[id] == value
                    if reapplied { s.reapplying[id] = nil }
                    return (d, name(id, in: s), reapplied)
                }
            })
        else { return }
        do throws(V4L2Error) {
            try device.set(id, to: value)
        } catch  where error.code == .inactive && reapplied {
            return
        } catch {
            let failure = onWriteFailure.withLock { $0 }
            failure?(cameraError(error, control: label))
        }
    }

    /// Opens the camera `selector` names, ready to set values (what `evcapture replay
    /// --camera DEV` drives; the daemon's ``CameraSession`` also follows it).
    public static func open(_ selector: CameraSelector) throws(CameraDiscoveryError) -> V4L2Camera {
        let opened = try CameraDiscovery.open(selector)
        let camera = V4L2Camera(identity: opened.identity)
        do {
            try camera.attach(opened, follow: CameraBindings(controls: opened.controls).boundControls)
        } catch {
            throw CameraDiscoveryError(reason: "cannot use camera \(opened.device.path): \(error)", rejected: [], underlying: error)
        }
        return camera
    }

    /// The node in use, nil while the camera is absent.
    public var devicePath: String? { state.withLock { $0.device?.path } }
    /// Whether the camera is present.
    public var isConnected: Bool { state.withLock { $0.device != nil } }

    // MARK: CameraBackend

    /// Every integer-valued control with its current value (string and compound controls,
    /// and controls whose value cannot be read right now, are left out).
    public func controls() throws(CameraError) -> [CameraControlInfo] {
        let device = try currentDevice(control: "*")
        let descriptions: [ControlDescription]
        do { descriptions = try device.controls() } catch { throw cameraError(error, control: "*") }
        var out: [CameraControlInfo] = []
        for d in descriptions where d.hasIntegerValue {
            let value: Int64
            if d.flags.contains(.writeOnly) {
                value = 0
            } else {
                do { value = try device.value(of: d) } catch {
                    if error.code == .deviceRemoved { throw cameraError(error, control: d.name) }
                    continue
                }
            }
            out.append(CameraControlInfo(d, value: value))
        }
        state.withLock { s in
            for d in descriptions { s.descriptions[d.id] = d }
            for c in out { s.known[c.id] = c.value }
        }
        return out
    }

    /// The description last queried or reported by a control event (ranges follow
    /// `V4L2_EVENT_CTRL`); `value` is the control's default, not read from the camera.
    public func cachedControl(_ id: CameraControlID) throws(CameraError) -> CameraControlInfo? {
        let cid = id
        return try state.withLock { s throws(CameraError) -> CameraControlInfo? in
            guard s.device != nil else { throw gone(control: name(cid, in: s)) }
            return s.descriptions[cid].map { CameraControlInfo($0, value: $0.defaultValue) }
        }
    }

    /// Sets a control (clamped and rounded to its step), remembers it as the person's value,
    /// follows it for changes made elsewhere, and returns the value the camera holds.
    @discardableResult
    public func set(_ id: CameraControlID, to value: Int64) throws(CameraError) -> Int64 {
        let cid = id
        if let writer = writer.withLock({ $0 }) { return try handOff(cid, value, to: writer) }
        return try state.withLock { s throws(CameraError) -> Int64 in
            guard let device = s.device else { throw gone(control: name(cid, in: s)) }
            let held: Int64
            do throws(V4L2Error) { held = try device.set(cid, to: value) } catch { throw cameraError(error, control: name(cid, in: s)) }
            s.personValues.removeAll { $0.0 == cid }
            s.personValues.append((cid, held))
            if !s.subscribed.contains(cid), (try? device.subscribe(to: cid)) != nil { s.subscribed.insert(cid) }
            return held
        }
    }

    /// ``set(_:to:)`` off the thread: checked against the cached description (a control
    /// that cannot be set now is refused at once, as the ioctl path would), remembered, queued.
    private func handOff(_ cid: ControlID, _ value: Int64, to writer: ControlWriter) throws(CameraError) -> Int64 {
        try state.withLock { s throws(CameraError) -> Int64 in
            guard let device = s.device else { throw gone(control: name(cid, in: s)) }
            guard let d = s.descriptions[cid] else {
                throw cameraError(V4L2Error(code: .noSuchControl, device: device.path, context: "setting it"), control: name(cid, in: s))
            }
            guard d.type.isInteger, d.elements <= 1 else {
                throw cameraError(
                    V4L2Error(code: .unsupportedType, device: device.path, control: d.name, context: "setting a \(d.type) control"),
                    control: d.name)
            }
            // Inactive is left to the writer, which asks the camera afresh: a control made
            // active by a set still queued (exposure time after auto exposure goes manual) has
            // stale flags here.
            if let refusal = d.flags.refusalForSet, refusal != .inactive {
                throw cameraError(
                    V4L2Error(code: refusal, device: device.path, control: d.name, context: "setting it to \(value)"), control: d.name)
            }
            let target = d.normalize(value)
            if let i = s.personValues.firstIndex(where: { $0.0 == cid }) {
                // In place while it is already the last one set (a knob turning): no allocation.
                if i == s.personValues.count - 1 {
                    s.personValues[i].1 = target
                } else {
                    s.personValues.remove(at: i)
                    s.personValues.append((cid, target))
                }
            } else {
                s.personValues.append((cid, target))
            }
            if !s.subscribed.contains(cid), (try? device.subscribe(to: cid)) != nil { s.subscribed.insert(cid) }
            s.known[cid] = target
            writer.submit(cid, target)
            return target
        }
    }

    /// Reads a control's value. With the writer thread (the daemon), the read is made there,
    /// after the values queued before it, and waited for at most ``readTimeout``: a camera
    /// that stops answering (uvcvideo: 5 s per transfer) then gets the value last known (read,
    /// reported by an event, or set), so the caller — the input thread, for the emulated
    /// exposure bias's base — never waits for it.
    public func value(of id: CameraControlID) throws(CameraError) -> Int64 {
        let cid = id
        let (device, label) = state.withLock { s in (s.device, name(cid, in: s)) }
        guard let device else { throw gone(control: label) }
        if let writer = writer.withLock({ $0 }) {
            if let v = writer.read(cid, timeout: Self.readTimeout) { return v }
            if let v = state.withLock({ $0.known[cid] }) { return v }
            throw CameraError(
                code: .busy, device: identity, control: label, context: "the camera did not answer within \(Self.readTimeout)")
        }
        do { return try device.value(of: cid) } catch { throw cameraError(error, control: label) }
    }

    /// How long ``value(of:)`` waits for the writer thread's read.
    static let readTimeout = Duration.milliseconds(100)

    /// ``value(of:)``'s read, on the writer's thread; remembered as known.
    private func readOnWriter(_ id: ControlID) -> Int64? {
        guard let device = state.withLock({ $0.device }), let v = try? device.value(of: id) else { return nil }
        state.withLock { $0.known[id] = v }
        return v
    }

    // MARK: For the session

    /// The person's last value for a control.
    public func personValue(of id: ControlID) -> Int64? {
        state.withLock { s in s.personValues.last { $0.0 == id }?.1 }
    }

    /// The description last seen for a control.
    public func description(of id: ControlID) -> ControlDescription? {
        state.withLock { $0.descriptions[id] }
    }

    /// Takes a newly opened device: its controls, and event subscriptions for `follow` plus
    /// every control the person set.
    func attach(_ opened: OpenedCamera, follow: [ControlID]) throws(V4L2Error) {
        try state.withLock { s throws(V4L2Error) in
            s.device = opened.device
            s.descriptions = Dictionary(opened.controls.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            s.subscribed = []
            for id in follow + s.personValues.map(\.0) where s.descriptions[id] != nil && !s.subscribed.contains(id) {
                try opened.device.subscribe(to: id)
                s.subscribed.insert(id)
            }
        }
    }

    /// Forgets the device (it went away); the person's values stay.
    func detach() {
        state.withLock { s in
            s.device = nil
            s.subscribed = []
        }
    }

    /// Sets the person's values again, in the order they were set (so auto exposure goes to
    /// manual before the exposure time it makes active). A control the camera refuses as
    /// inactive (exposure time while auto exposure is back on) is skipped: setting it would
    /// have no effect. With a writer thread the values are handed to it (a camera that stops
    /// answering holds that thread, never the caller or this camera's lock; other failures
    /// come through `onFailure`) and reported as the values asked for; without one they are
    /// set here, outside the lock. Returns what was applied and what failed.
    func reapply(only ids: Set<ControlID>? = nil) -> [(ControlID, Result<Int64, CameraError>)] {
        let writer = writer.withLock { $0 }
        let (device, values) = state.withLock { s -> (V4L2Device?, [(ControlID, Int64, String)]) in
            let values = s.personValues.filter { id, _ in ids?.contains(id) ?? true }
            if writer != nil, s.device != nil { for (id, value) in values { s.reapplying[id] = value } }
            return (s.device, values.map { ($0.0, $0.1, name($0.0, in: s)) })
        }
        guard let device else { return [] }
        if let writer {
            for (id, value, _) in values { writer.submit(id, value) }
            return values.map { ($0.0, .success($0.1)) }
        }
        var results: [(ControlID, Result<Int64, CameraError>)] = []
        for (id, value, label) in values {
            do throws(V4L2Error) {
                results.append((id, .success(try device.set(id, to: value))))
            } catch  where error.code == .inactive {
                continue
            } catch {
                results.append((id, .failure(cameraError(error, control: label))))
            }
        }
        return results
    }

    /// Applies a control event to what is known: range and flags, and in follow mode the
    /// person's value becomes the camera's (so a replug restores what the camera last had).
    func apply(_ event: ControlEvent, adoptValue: Bool) {
        state.withLock { s in
            if var d = s.descriptions[event.id] {
                if event.changes.contains(.flags) { d.flags = event.flags }
                if event.changes.contains(.range) {
                    d.minimum = event.minimum
                    d.maximum = event.maximum
                    d.step = UInt64(max(event.step, 1))
                    d.defaultValue = event.defaultValue
                }
                s.descriptions[event.id] = d
            }
            if event.changes.contains(.value) { s.known[event.id] = event.value }
            if adoptValue, event.changes.contains(.value),
                let i = s.personValues.firstIndex(where: { $0.0 == event.id })
            {
                s.personValues[i].1 = event.value
            }
        }
    }

    // MARK: Helpers

    private func currentDevice(control: String) throws(CameraError) -> V4L2Device {
        guard let device = state.withLock({ $0.device }) else { throw gone(control: control) }
        return device
    }

    private func gone(control: String) -> CameraError {
        CameraError(code: .deviceRemoved, device: identity, control: control, context: "the camera is not connected")
    }

    private func name(_ id: ControlID, in s: State) -> String {
        s.descriptions[id]?.name ?? id.description
    }
}

/// A V4L2 error naming the control it is about.
func cameraError(_ error: V4L2Error, control: String) -> CameraError {
    var error = error
    if error.control == nil { error.control = control }
    return error
}

extension CameraControlInfo {
    /// A V4L2 description and value as the controls see them.
    init(_ d: ControlDescription, value: Int64) {
        let kind: Kind =
            switch d.type {
            case .integer, .integer64: .integer
            case .boolean: .boolean
            case .menu: .menu
            case .integerMenu: .integerMenu
            case .button: .button
            default: .other
            }
        self.init(
            id: d.id, name: d.name, kind: kind, minimum: d.minimum, maximum: d.maximum,
            step: Int64(clamping: d.step), defaultValue: d.defaultValue, value: value,
            menu: Dictionary(d.menu.map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a }),
            isInactive: d.flags.contains(.inactive), isReadOnly: d.flags.contains(.readOnly))
    }
}
