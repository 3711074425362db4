import Vocabulary

/// The one pipeline every input goes through, live (`evcapture run`) or replayed
/// (`evcapture replay`): device roles → capture core (press lifecycle, routing, gestures,
/// session gating) → controls stage (sliders, light presses, camera). It is incremental and
/// reads no clock: the caller hands in kernel times and `now`, and calls
/// ``fireDeadlines(through:_:)`` when ``nextDeadline`` comes.
///
/// Outputs go to `emit` in order, as typed ``PipelineEvent``s.
public struct Pipeline {
    public private(set) var core: CaptureCore
    public var controls: (any ControlsStage)?
    private var ids: [Int: CaptureDeviceID] = [:]
    private var profiles: [Int: DeviceProfile] = [:]
    private var nextIndex = 0
    private var out: [CaptureEvent] = []
    /// Key releases the input core made up (``Frame/releasedByKernel``), per device, held
    /// until `decideBy`: a removal of the device before then means it was unplugged (its
    /// presses are cancelled `device-removed`, not ended: nobody let go of the key);
    /// otherwise it was reset (resume) and they count as lost events.
    private var heldReleases: [Int: (events: [InputEvent], decideBy: Timestamp)] = [:]
    /// How long a kernel release waits for the removal that usually follows within
    /// microseconds (the same `input_unregister_device` call).
    static let removalGrace = Duration.seconds(1)

    /// When the session runs: always (the caller starts and stops it) or launched.
    public let session: SessionPolicy
    /// The last input of a launched session (its idle stop counts from here).
    private var lastActivity: Timestamp?

    public init(settings: CaptureCoreSettings, controls: (any ControlsStage)? = nil, session: SessionPolicy = SessionPolicy()) {
        core = CaptureCore(settings: settings)
        self.controls = controls
        self.session = session
        out.reserveCapacity(16)
    }

    public var isRunning: Bool { core.isRunning }
    /// The earliest time something is due (a long press, a controls timeout, a held release).
    public var nextDeadline: Timestamp? {
        var next = core.nextDeadline
        if let idle = idleDeadline, next == nil || idle < next! { next = idle }
        if let c = controls?.nextDeadline, next == nil || c < next! { next = c }
        for held in heldReleases.values where next == nil || held.decideBy < next! { next = held.decideBy }
        return next
    }

    /// Adds a device; returns its index for later calls. `keysDown` (libevdev's state at
    /// open) are ignored until released.
    public mutating func addDevice(
        _ profile: DeviceProfile, keysDown: [EventCode] = [], at now: Timestamp, _ emit: (PipelineEvent) -> Void
    ) -> Int {
        let index = nextIndex
        nextIndex += 1
        let id = core.addDevice(profile, keysDown: keysDown)
        ids[index] = id
        profiles[index] = profile
        emit(.device(DeviceChange(kind: .added, device: core.device(id), profile: profile, time: now)))
        controls?.deviceAdded(profile, index: index, at: now, emit)
        return index
    }

    /// Gives the pipeline a controls stage after it started (a camera plugged in later):
    /// the stage learns every device present.
    public mutating func attachControls(_ stage: any ControlsStage, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        controls = stage
        for index in profiles.keys.sorted() {
            stage.deviceAdded(profiles[index]!, index: index, at: now, emit)
        }
    }

    /// Removes a device: its presses in flight are cancelled (`device-removed`).
    public mutating func removeDevice(_ index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        guard let id = ids.removeValue(forKey: index) else { return }
        profiles[index] = nil
        heldReleases[index] = nil
        let device = core.device(id)
        core.removeDevice(id, now: now, into: &out)
        flush(emit)
        controls?.deviceRemoved(index: index, at: now, emit)
        emit(.device(DeviceChange(kind: .removed, device: device, time: now)))
    }

    /// The capture session starts or resumes (events only while it runs:
    /// docs/behaviour.md#the-capture-session).
    public mutating func sessionStarted(
        at now: Timestamp, reason: String? = nil, camera: String? = nil, cameraNode: String? = nil,
        _ emit: (PipelineEvent) -> Void
    ) {
        core.sessionStarted(now: now, into: &out)
        lastActivity = now
        flush(emit)
        emit(.session(SessionChange(.started, reason: reason, camera: camera, cameraNode: cameraNode, time: now)))
    }

    /// When a launched session stops for want of input.
    var idleDeadline: Timestamp? {
        guard session.mode == .launch, core.isRunning, let last = lastActivity else { return nil }
        return last + session.idleStop
    }

    /// The session stops (`paused` false) or pauses: presses in flight are cancelled.
    public mutating func sessionStopped(
        at now: Timestamp, paused: Bool = false, reason: String? = nil, _ emit: (PipelineEvent) -> Void
    ) {
        if paused { core.sessionPaused(now: now, into: &out) } else { core.sessionStopped(now: now, into: &out) }
        flush(emit)
        emit(.session(SessionChange(paused ? .paused : .stopped, reason: reason, time: now)))
    }

    /// One frame of a device (events up to `SYN_REPORT`).
    public mutating func handle(frame: [InputEvent], device index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        guard let id = ids[index] else { return }
        fireDeadlines(through: now, emit)
        let forControls = core.handle(frame: frame, device: id, now: now, into: &out) && controls != nil
        flush(emit)
        if session.mode == .launch {
            if core.isRunning {
                lastActivity = now
            } else if frame.contains(where: { $0.type == .key && $0.code == session.launchButton.code && $0.value == 1 }) {
                // The core saw the launch key go down while stopped: it is ignored until
                // released, so the press that opens the session takes no photo.
                sessionStarted(at: now, reason: "launch", emit)
                return
            }
        }
        if forControls {
            controls!.handle(frame: frame, device: index, at: now, emit)
        } else if !core.isRunning {
            // Nothing moves while the session is stopped, but a jog wheel's counter or an
            // absolute knob turned meanwhile must not jump the slider at the next turn.
            controls?.observe(frame: frame, device: index)
        }
    }

    /// A frame as a device delivered it (live or recorded), read at `now`: a resync after
    /// `SYN_DROPPED` counts as lost events (``eventsLost(device:changes:at:_:)``); key
    /// releases the kernel made up are held for ``removalGrace`` (see `heldReleases`); any
    /// other frame is handled.
    public mutating func handle(_ frame: Frame, device index: Int, now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        guard ids[index] != nil else { return }
        releaseHeld(index, at: frame.time, emit)
        if frame.releasedByKernel {
            heldReleases[index] = (frame.events, now + Self.removalGrace)
            return
        }
        if frame.resync != nil {
            eventsLost(device: index, changes: frame.events, at: frame.time, emit)
        } else {
            handle(frame: frame.events, device: index, at: frame.time, emit)
        }
    }

    /// Events were lost on a device (`SYN_DROPPED`); `changes` are the key events the resync
    /// found. Presses in flight on it are cancelled (`events-lost`).
    public mutating func eventsLost(device index: Int, changes: [InputEvent], at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        guard let id = ids[index] else { return }
        fireDeadlines(through: now, emit)
        core.eventsLost(device: id, changes: changes, now: now, into: &out)
        flush(emit)
        controls?.eventsLost(device: index, at: now, emit)
    }

    /// Fires every deadline (capture and controls) at or before `limit` (all of them when
    /// nil), each at its own time, in time order.
    public mutating func fireDeadlines(through limit: Timestamp?, _ emit: (PipelineEvent) -> Void) {
        // Bounded: each pass moves at least one deadline past `d`; the bound only guards
        // against a stage that would keep a deadline in the past.
        for _ in 0..<100_000 {
            guard let d = nextDeadline, limit == nil || d <= limit! else { return }
            for (index, held) in heldReleases where held.decideBy <= d { releaseHeld(index, at: d, emit) }
            if let idle = idleDeadline, idle <= d {
                if core.hasPressesInFlight {
                    lastActivity = d  // a press held still counts as use
                } else {
                    sessionStopped(at: idle, reason: "idle", emit)
                }
            }
            // The core's clock moves to every deadline, controls ones included, so the end
            // of a replay is the time of the last thing that happened.
            core.advance(to: d, into: &out)
            flush(emit)
            if let stage = controls, let cd = stage.nextDeadline, cd <= d { stage.advance(to: d, emit) }
        }
    }

    /// The latest time the core has seen.
    public var clock: Timestamp { core.clock }

    /// Feeds a held kernel release as lost events (the device stayed: it was reset).
    private mutating func releaseHeld(_ index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        guard let held = heldReleases.removeValue(forKey: index) else { return }
        eventsLost(device: index, changes: held.events, at: max(now, core.clock), emit)
    }

    private mutating func flush(_ emit: (PipelineEvent) -> Void) {
        for e in out { emit(.capture(e)) }
        out.removeAll(keepingCapacity: true)
    }
}
