import Capture
import Evdev

/// The one pipeline every input goes through, live (`evcapture run`) or replayed
/// (`evcapture replay`): device roles → capture core (press lifecycle, routing, gestures,
/// session gating) → controls stage (sliders, light presses, camera). It is incremental and
/// reads no clock: the caller hands in kernel times and `now`, and calls
/// ``fireDeadlines(through:_:)`` when ``nextDeadline`` comes.
///
/// Outputs go to `emit` in order: capture events as values (for handlers and actions),
/// everything else (device, session, controls objects) already encoded.
public struct Pipeline {
    public private(set) var core: CaptureCore
    public var controls: (any ReplayControlsStage)?
    private var ids: [Int: CaptureDeviceID] = [:]
    private var profiles: [Int: DeviceProfile] = [:]
    private var nextIndex = 0
    private var out: [CaptureOutput] = []

    public init(settings: CaptureCoreSettings, controls: (any ReplayControlsStage)? = nil) {
        core = CaptureCore(settings: settings)
        self.controls = controls
        out.reserveCapacity(16)
    }

    public var isRunning: Bool { core.isRunning }
    /// The earliest time something is due (a long press, a controls timeout).
    public var nextDeadline: Timestamp? {
        switch (core.nextDeadline, controls?.nextDeadline) {
        case (let a?, let b?): min(a, b)
        case (let a?, nil): a
        case (nil, let b?): b
        case (nil, nil): nil
        }
    }

    /// Adds a device; returns its index for later calls. `keysDown` (libevdev's state at
    /// open) are ignored until released.
    public mutating func addDevice(
        _ profile: DeviceProfile, keysDown: [EventCode] = [], at now: Timestamp, _ emit: (ReplayOutput) -> Void
    ) -> Int {
        let index = nextIndex
        nextIndex += 1
        let id = core.addDevice(profile, keysDown: keysDown)
        ids[index] = id
        profiles[index] = profile
        let device = core.device(id)
        emit(
            .line(
                json: JSONLines.device("added", device, time: now, extra: [("roles", JSONLines.roles(profile))]),
                text: "\(ReadableLines.pad(now.description, 12)) device added   \(device.name) (\(device.node)): "
                    + Self.rolesText(profile)))
        if controls != nil { emitAll(controls!.deviceAdded(profile, index: index, at: now), emit) }
        return index
    }

    /// Gives the pipeline a controls stage after it started (a camera plugged in later):
    /// the stage learns every device present.
    public mutating func attachControls(_ stage: any ReplayControlsStage, at now: Timestamp, _ emit: (ReplayOutput) -> Void) {
        controls = stage
        for index in profiles.keys.sorted() {
            emitAll(controls!.deviceAdded(profiles[index]!, index: index, at: now), emit)
        }
    }

    /// Removes a device: its presses in flight are cancelled (`device-removed`).
    public mutating func removeDevice(_ index: Int, at now: Timestamp, _ emit: (ReplayOutput) -> Void) {
        guard let id = ids.removeValue(forKey: index) else { return }
        profiles[index] = nil
        let device = core.device(id)
        core.removeDevice(id, now: now, into: &out)
        flush(emit)
        if controls != nil { emitAll(controls!.deviceRemoved(index: index, at: now), emit) }
        emit(
            .line(
                json: JSONLines.device("removed", device, time: now),
                text: "\(ReadableLines.pad(now.description, 12)) device removed \(device.name) (\(device.node))"))
    }

    /// The capture session starts or resumes (spec §3: events only while it runs).
    public mutating func sessionStarted(at now: Timestamp, extra: [(String, JSONValue)] = [], _ emit: (ReplayOutput) -> Void) {
        core.sessionStarted(now: now, into: &out)
        flush(emit)
        emit(.line(json: JSONLines.session("started", time: now, extra: extra), text: "\(ReadableLines.pad(now.description, 12)) session started"))
    }

    /// The session stops (`paused` false) or pauses: presses in flight are cancelled.
    public mutating func sessionStopped(
        at now: Timestamp, paused: Bool = false, extra: [(String, JSONValue)] = [], _ emit: (ReplayOutput) -> Void
    ) {
        if paused { core.sessionPaused(now: now, into: &out) } else { core.sessionStopped(now: now, into: &out) }
        flush(emit)
        let state = paused ? "paused" : "stopped"
        emit(.line(json: JSONLines.session(state, time: now, extra: extra), text: "\(ReadableLines.pad(now.description, 12)) session \(state)"))
    }

    /// One frame of a device (events up to `SYN_REPORT`).
    public mutating func handle(frame: [InputEvent], device index: Int, at now: Timestamp, _ emit: (ReplayOutput) -> Void) {
        guard let id = ids[index] else { return }
        fireDeadlines(through: now, emit)
        core.handle(frame: frame, device: id, now: now, into: &out)
        var inputs: [ControlInput] = []
        if controls != nil {
            for o in out { if case .control(let c) = o { inputs.append(c) } }
        }
        flush(emit)
        if !inputs.isEmpty { emitAll(controls!.handle(frame: frame, device: index, inputs: inputs, at: now), emit) }
    }

    /// A frame as a live device delivered it: a resync after `SYN_DROPPED` counts as lost
    /// events (``eventsLost(device:changes:at:_:)``), any other frame is handled.
    public mutating func handle(_ frame: Frame, device index: Int, _ emit: (ReplayOutput) -> Void) {
        if frame.resync != nil {
            eventsLost(device: index, changes: frame.events, at: frame.time, emit)
        } else {
            handle(frame: frame.events, device: index, at: frame.time, emit)
        }
    }

    /// Events were lost on a device (`SYN_DROPPED`); `changes` are the key events the resync
    /// found. Presses in flight on it are cancelled (`events-lost`).
    public mutating func eventsLost(device index: Int, changes: [InputEvent], at now: Timestamp, _ emit: (ReplayOutput) -> Void) {
        guard let id = ids[index] else { return }
        fireDeadlines(through: now, emit)
        core.eventsLost(device: id, changes: changes, now: now, into: &out)
        flush(emit)
        if controls != nil { emitAll(controls!.eventsLost(device: index, at: now), emit) }
    }

    /// Fires every deadline (capture and controls) at or before `limit` (all of them when
    /// nil), each at its own time, in time order.
    public mutating func fireDeadlines(through limit: Timestamp?, _ emit: (ReplayOutput) -> Void) {
        // Bounded: each pass moves at least one deadline past `d`; the bound only guards
        // against a stage that would keep a deadline in the past.
        for _ in 0..<100_000 {
            guard let d = nextDeadline, limit == nil || d <= limit! else { return }
            // The core's clock moves to every deadline, controls ones included, so the end
            // of a replay is the time of the last thing that happened.
            core.advance(to: d, into: &out)
            flush(emit)
            if controls != nil, let cd = controls!.nextDeadline, cd <= d { emitAll(controls!.advance(to: d), emit) }
        }
    }

    /// The latest time the core has seen.
    public var clock: Timestamp { core.clock }
    /// Indices of the devices present, in the order they were added.
    public var deviceIndices: [Int] { ids.keys.sorted() }

    private mutating func flush(_ emit: (ReplayOutput) -> Void) {
        for o in out { if case .capture(let e) = o { emit(.capture(e)) } }
        out.removeAll(keepingCapacity: true)
    }

    private func emitAll(_ outputs: [ReplayOutput], _ emit: (ReplayOutput) -> Void) {
        for o in outputs { emit(o) }
    }

    static func rolesText(_ profile: DeviceProfile) -> String {
        let roles = profile.roles.filter { $0.value.role != .ignore }.sorted { $0.key < $1.key }
        if roles.isEmpty { return "no roles" }
        return roles.map { code, a in
            "\(code.name)=\(a.step > 0 ? "slider+1" : a.step < 0 ? "slider-1" : a.role.rawValue)"
        }.joined(separator: " ")
    }
}
