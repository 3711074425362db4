import Vocabulary

/// Gesture thresholds and routing for the capture core.
public struct CaptureCoreSettings: Sendable, Hashable {
    /// A press held this long is a long press (reported when it passes). Default 0.5 s.
    public var holdThreshold: Duration
    /// Whether a quick second click is reported as `double-click`. Default off.
    public var doubleClickEnabled: Bool
    /// Longest gap from a click's release to the next press for a double click. Default 300 ms.
    public var doubleClickWindow: Duration
    /// Whether an app installed a secondary handler. Without one, secondary presses are
    /// routed to the primary handler and reported as `primary` (docs/behaviour.md#routing).
    /// Default false.
    public var hasSecondaryHandler: Bool

    public init(
        holdThreshold: Duration = .milliseconds(500), doubleClickEnabled: Bool = false,
        doubleClickWindow: Duration = .milliseconds(300), hasSecondaryHandler: Bool = false
    ) {
        self.holdThreshold = holdThreshold
        self.doubleClickEnabled = doubleClickEnabled
        self.doubleClickWindow = doubleClickWindow
        self.hasSecondaryHandler = hasSecondaryHandler
    }
}

/// A device known to a `CaptureCore`. Stale ids (of removed devices) are a programmer error.
public struct CaptureDeviceID: Hashable, Sendable, CustomStringConvertible {
    let slot: Int32
    let generation: UInt32
    public var description: String { "device#\(slot).\(generation)" }
}

/// The capture core: press lifecycle, routing, session gating and gestures
/// (docs/behaviour.md#press-lifecycle) as a
/// pure state machine, in the style of keyd — a function of (state, input, now) that writes
/// outputs and exposes the next deadline. It reads no clock and starts no timer: the caller
/// passes `now` (the frame's kernel timestamp on the clock the devices use, or a recording's
/// time) and calls `advance(to:)` when `nextDeadline` comes.
///
/// Time never runs backwards inside the core: a `now` earlier than one already seen is
/// taken as the latest time seen (frames of different devices may interleave slightly).
///
/// Every entry point writes into a caller-owned `[CaptureEvent]`; the core appends and
/// never clears it. In steady state (devices added, buffers grown) handling a frame does not
/// allocate.
///
/// Rules kept here:
/// - `began` on value 1, `ended` on value 0, value 2 (autorepeat) adds nothing.
/// - Every `began` gets exactly one `ended` or `cancelled` with its press id; nothing ends
///   that did not begin.
/// - A key down when the session starts (or when its device is added to a running session,
///   or after events were lost) is ignored until it is released.
/// - Presses begin only while the session runs; stopping or pausing cancels those in flight.
/// - Routing: `primary` keys → `.primary`; `secondary` keys → `.secondary` when a secondary
///   handler is installed, else `.primary`. The action is fixed at `began` for the press.
/// - `shouldPlaySound` only for presses of headset (AVRCP) devices.
/// - Slider and light-press codes are not decoded here: ``handle(frame:device:now:into:)``
///   says whether a frame carries any (only while running; a key that is ignored until
///   released is ignored for controls too), and the controls decode that frame once.
public struct CaptureCore: Sendable {
    public var settings: CaptureCoreSettings

    /// Whether the capture session runs (started and not stopped/paused).
    public private(set) var isRunning = false
    /// The latest time the core has seen.
    public private(set) var clock = Timestamp(microseconds: 0)

    // Per (device slot, key code) one byte: the role (low 3 bits) and two state bits.
    // One flat array: no per-device nested arrays on the hot path.
    static let keyCount = 0x300  // KEY_MAX + 1
    static let roleMask: UInt8 = 0x07
    static let downBit: UInt8 = 0x10
    static let ignoredBit: UInt8 = 0x20
    private var keys: [UInt8] = []

    private struct DeviceRecord {
        var device: CaptureDevice?
        var generation: UInt32
        /// Roles of non-key codes (relative/absolute axes): few, scanned linearly.
        var otherRoles: [(code: EventCode, role: Role, step: Int)]
    }
    private var devices: [DeviceRecord] = []
    private var freeSlots: [Int32] = []

    private struct Press {
        var slot: Int32
        var code: UInt16
        var id: PressID
        var action: CaptureAction
        var began: Timestamp
        var deadline: Timestamp
        var sound: Bool
        var held: Bool
        var doubleCandidate: Bool
    }
    /// Presses in flight: a handful at most, scanned linearly.
    private var presses: [Press] = []
    /// Whether a press has begun and not yet ended or been cancelled.
    var hasPressesInFlight: Bool { !presses.isEmpty }
    private var lastClicks: [(slot: Int32, code: UInt16, ended: Timestamp)] = []
    private var nextPress: UInt64 = 1

    public init(settings: CaptureCoreSettings = CaptureCoreSettings()) {
        self.settings = settings
        presses.reserveCapacity(16)
        lastClicks.reserveCapacity(16)
    }

    // Role codes stored in the key table.
    private enum KeyRole: UInt8 {
        case ignore = 0, primary, secondary, lightPress, slider, sliderUp, sliderDown
        init(_ r: Role, step: Int) {
            switch r {
            case .ignore: self = .ignore
            case .primary: self = .primary
            case .secondary: self = .secondary
            case .lightPress: self = .lightPress
            case .slider: self = step > 0 ? .sliderUp : step < 0 ? .sliderDown : .slider
            }
        }
    }

    // MARK: Devices

    /// Adds a device. `keysDown` are the keys down at open time (libevdev's state); they are
    /// ignored until released.
    public mutating func addDevice(_ profile: DeviceProfile, keysDown: [EventCode] = []) -> CaptureDeviceID {
        let device = CaptureDevice(profile: profile)
        var others: [(code: EventCode, role: Role, step: Int)] = []
        let slot: Int32
        let generation: UInt32
        if let s = freeSlots.popLast() {
            slot = s
            generation = devices[Int(s)].generation &+ 1
        } else {
            slot = Int32(devices.count)
            generation = 0
            devices.append(DeviceRecord(device: nil, generation: 0, otherRoles: []))
            keys.append(contentsOf: repeatElement(0, count: Self.keyCount))
        }
        let base = Int(slot) * Self.keyCount
        for i in base..<(base + Self.keyCount) { keys[i] = 0 }
        for (code, assignment) in profile.roles where assignment.role != .ignore {
            if code.type == .key, Int(code.code) < Self.keyCount {
                keys[base + Int(code.code)] = KeyRole(assignment.role, step: assignment.step).rawValue
            } else if code.type != .key {
                others.append((code, assignment.role, assignment.step))
            }
        }
        others.sort { $0.code < $1.code }
        for code in keysDown where code.type == .key && Int(code.code) < Self.keyCount {
            keys[base + Int(code.code)] |= Self.downBit | (isRunning ? Self.ignoredBit : 0)
        }
        devices[Int(slot)] = DeviceRecord(device: device, generation: generation, otherRoles: others)
        return CaptureDeviceID(slot: slot, generation: generation)
    }

    /// The device behind an id.
    public func device(_ id: CaptureDeviceID) -> CaptureDevice {
        checked(id)
        return devices[Int(id.slot)].device!
    }

    /// Removes a device: its presses in flight are cancelled (`device-removed`).
    public mutating func removeDevice(_ id: CaptureDeviceID, now: Timestamp, into out: inout [CaptureEvent]) {
        checked(id)
        tick(now)
        advanceDeadlines(through: clock, into: &out)
        cancelPresses(reason: .deviceRemoved, into: &out) { $0.slot == id.slot }
        lastClicks.removeAll { $0.slot == id.slot }
        devices[Int(id.slot)].device = nil
        devices[Int(id.slot)].otherRoles = []
        freeSlots.append(id.slot)
    }

    private func checked(_ id: CaptureDeviceID) {
        precondition(
            Int(id.slot) < devices.count && devices[Int(id.slot)].generation == id.generation
                && devices[Int(id.slot)].device != nil, "stale \(id)")
    }

    // MARK: Session

    /// The session starts (or resumes). Keys down now are ignored until released.
    public mutating func sessionStarted(now: Timestamp, into out: inout [CaptureEvent]) {
        tick(now)
        guard !isRunning else { return }
        isRunning = true
        for i in keys.indices where keys[i] & Self.downBit != 0 { keys[i] |= Self.ignoredBit }
    }

    /// The session stops: presses in flight are cancelled (`session-stopped`).
    public mutating func sessionStopped(now: Timestamp, into out: inout [CaptureEvent]) {
        endSession(reason: .sessionStopped, now: now, into: &out)
    }

    /// The session pauses: presses in flight are cancelled (`session-paused`). Resume with
    /// `sessionStarted`.
    mutating func sessionPaused(now: Timestamp, into out: inout [CaptureEvent]) {
        endSession(reason: .sessionPaused, now: now, into: &out)
    }

    private mutating func endSession(reason: CancelReason, now: Timestamp, into out: inout [CaptureEvent]) {
        tick(now)
        advanceDeadlines(through: clock, into: &out)
        cancelPresses(reason: reason, into: &out) { _ in true }
        lastClicks.removeAll()
        isRunning = false
    }

    // MARK: Lost events

    /// Events were lost on a device (`SYN_DROPPED`); `changes` are the key events the
    /// reader's resync found (libevdev's `LIBEVDEV_READ_FLAG_SYNC` events; other types are
    /// ignored). Every press in flight on the device is cancelled (`events-lost`): whatever
    /// happened during the loss, it cannot end normally. Keys down after the resync are
    /// ignored until released — nothing begins from a press that was not seen.
    public mutating func eventsLost(
        device id: CaptureDeviceID, changes: [InputEvent], now: Timestamp, into out: inout [CaptureEvent]
    ) {
        checked(id)
        tick(now)
        advanceDeadlines(through: clock, into: &out)
        cancelPresses(reason: .eventsLost, into: &out) { $0.slot == id.slot }
        lastClicks.removeAll { $0.slot == id.slot }
        let base = Int(id.slot) * Self.keyCount
        for e in changes where e.type == .key && Int(e.code) < Self.keyCount && e.value != 2 {
            if e.value == 0 { keys[base + Int(e.code)] &= ~Self.downBit } else { keys[base + Int(e.code)] |= Self.downBit }
        }
        for i in base..<(base + Self.keyCount) {
            if keys[i] & Self.downBit != 0 { keys[i] |= Self.ignoredBit } else { keys[i] &= ~Self.ignoredBit }
        }
    }

    // MARK: Frames and time

    /// The earliest time at which `advance(to:)` has something to do (a long press to report).
    public var nextDeadline: Timestamp? {
        var best: Timestamp? = nil
        for p in presses where !p.held {
            if best == nil || p.deadline < best! { best = p.deadline }
        }
        return best
    }

    /// Fires every deadline at or before `now`, in time order.
    public mutating func advance(to now: Timestamp, into out: inout [CaptureEvent]) {
        tick(now)
        advanceDeadlines(through: clock, into: &out)
    }

    /// Handles one frame (the events up to and including its `SYN_REPORT`; the report itself
    /// may be left out) from a device. Deadlines at or before `now` fire first, so a release
    /// exactly at the hold threshold ends a long press, not a click.
    /// Returns whether the frame carries slider or light-press inputs (while running): the
    /// frame the controls decode.
    @discardableResult
    public mutating func handle(
        frame: [InputEvent], device id: CaptureDeviceID, now: Timestamp, into out: inout [CaptureEvent]
    ) -> Bool {
        controlSeen = false
        defer { controlSeen = false }
        checked(id)
        tick(now)
        advanceDeadlines(through: clock, into: &out)
        let base = Int(id.slot) * Self.keyCount
        for e in frame {
            if e.type == .key {
                handleKey(e, slot: id.slot, base: base, into: &out)
            } else if e.type == .rel || e.type == .abs, isRunning {
                for r in devices[Int(id.slot)].otherRoles where r.code.type == e.type && r.code.code == e.code {
                    if r.role == .slider || r.role == .lightPress { controlSeen = true }
                    break
                }
            }
        }
        return controlSeen
    }

    @inline(__always)
    private mutating func handleKey(_ e: InputEvent, slot: Int32, base: Int, into out: inout [CaptureEvent]) {
        guard Int(e.code) < Self.keyCount, e.value == 0 || e.value == 1 else { return }  // value 2: autorepeat
        let i = base + Int(e.code)
        let byte = keys[i]
        if e.value == 1 {
            guard byte & Self.downBit == 0 else { return }  // already down: the kernel would have dropped it
            keys[i] = byte | Self.downBit
            guard isRunning else { return }
            keyDown(KeyRole(rawValue: byte & Self.roleMask) ?? .ignore, slot: slot, code: e.code, into: &out)
        } else {
            guard byte & Self.downBit != 0 else { return }  // up while up: nothing ends that did not begin
            keys[i] = byte & ~(Self.downBit | Self.ignoredBit)
            if byte & Self.ignoredBit != 0 { return }
            keyUp(KeyRole(rawValue: byte & Self.roleMask) ?? .ignore, slot: slot, code: e.code, into: &out)
        }
    }

    private mutating func keyDown(_ role: KeyRole, slot: Int32, code: UInt16, into out: inout [CaptureEvent]) {
        let action: CaptureAction
        switch role {
        case .ignore: return
        case .primary: action = .primary
        case .secondary: action = settings.hasSecondaryHandler ? .secondary : .primary
        case .lightPress, .slider, .sliderUp, .sliderDown:
            control(role, slot: slot, code: code, value: 1, into: &out)
            return
        }
        let device = devices[Int(slot)].device!
        let id = PressID(rawValue: nextPress)
        nextPress += 1
        var doubleCandidate = false
        if settings.doubleClickEnabled {
            for (n, c) in lastClicks.enumerated() where c.slot == slot && c.code == code {
                doubleCandidate = clock - c.ended <= settings.doubleClickWindow
                lastClicks.remove(at: n)
                break
            }
        }
        presses.append(
            Press(
                slot: slot, code: code, id: id, action: action, began: clock, deadline: clock + settings.holdThreshold,
                sound: device.isHeadset, held: false, doubleCandidate: doubleCandidate))
        out.append(
            CaptureEvent(
                phase: .began, action: action, button: .key(code), device: device, press: id, time: clock,
                shouldPlaySound: device.isHeadset))
    }

    private mutating func keyUp(_ role: KeyRole, slot: Int32, code: UInt16, into out: inout [CaptureEvent]) {
        switch role {
        case .ignore: return
        case .primary, .secondary: break
        case .lightPress, .slider, .sliderUp, .sliderDown:
            if isRunning { control(role, slot: slot, code: code, value: 0, into: &out) }
            return
        }
        guard let n = presses.firstIndex(where: { $0.slot == slot && $0.code == code }) else { return }
        let p = presses.remove(at: n)
        var gesture: Gesture? = nil
        if !p.held {
            if p.doubleCandidate {
                gesture = .doubleClick
            } else {
                gesture = .click
                if settings.doubleClickEnabled { lastClicks.append((slot, code, clock)) }
            }
        }
        out.append(
            CaptureEvent(
                phase: .ended, action: p.action, button: .key(code), device: devices[Int(slot)].device!,
                press: p.id, time: clock, began: p.began, shouldPlaySound: p.sound, gesture: gesture))
    }

    /// A slider or light-press key moved while running: the controls decode the frame.
    private mutating func control(_ role: KeyRole, slot: Int32, code: UInt16, value: Int32, into out: inout [CaptureEvent]) {
        controlSeen = true
    }

    /// Set by the frame being handled when it has a slider or light-press input.
    private var controlSeen = false

    private mutating func tick(_ now: Timestamp) {
        if clock < now { clock = now }
    }

    private mutating func advanceDeadlines(through now: Timestamp, into out: inout [CaptureEvent]) {
        // Fire in deadline order; ties in press order.
        while true {
            var best = -1
            for i in presses.indices where !presses[i].held && presses[i].deadline <= now {
                if best < 0 || presses[i].deadline < presses[best].deadline { best = i }
            }
            if best < 0 { return }
            presses[best].held = true
            let p = presses[best]
            out.append(
                CaptureEvent(
                    phase: .held, action: p.action, button: .key(p.code), device: devices[Int(p.slot)].device!,
                    press: p.id, time: p.deadline, began: p.began, shouldPlaySound: p.sound, gesture: .longPress))
        }
    }

    private mutating func cancelPresses(
        reason: CancelReason, into out: inout [CaptureEvent], where match: (Press) -> Bool
    ) {
        var i = 0
        while i < presses.count {
            if match(presses[i]) {
                let p = presses.remove(at: i)
                out.append(
                    CaptureEvent(
                        phase: .cancelled, action: p.action, button: .key(p.code),
                        device: devices[Int(p.slot)].device!, press: p.id, time: clock, began: p.began,
                        shouldPlaySound: p.sound, reason: reason))
            } else {
                i += 1
            }
        }
    }
}

extension CaptureCore {
    /// Convenience for tests and tools: the outputs of one call as a new array.
    public mutating func handle(frame: [InputEvent], device: CaptureDeviceID, now: Timestamp) -> [CaptureEvent] {
        var out: [CaptureEvent] = []
        handle(frame: frame, device: device, now: now, into: &out)
        return out
    }
}
