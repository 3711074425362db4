/// Where a capture event stands in its press (docs/behaviour.md#press-lifecycle).
public enum CapturePhase: String, Sendable, Hashable, CaseIterable {
    /// The key went down (value 1).
    case began
    /// The press passed the hold threshold while still down. Comes between `began` and
    /// `ended`/`cancelled`, at most once per press, and always carries `gesture == .longPress`.
    /// It is not a lifecycle phase: it neither starts nor ends a press.
    case held
    /// The key came up (value 0).
    case ended
    /// The press can no longer end normally; `CaptureEvent.reason` says why.
    case cancelled
}

/// Which capture button a press counts as, after routing.
public enum CaptureAction: String, Sendable, Hashable, CaseIterable {
    case primary
    case secondary
}

/// Why a press was cancelled.
public enum CancelReason: String, Sendable, Hashable, CaseIterable {
    /// Its device went away (unplugged, BlueZ dropped the AVRCP node, end of a replay).
    case deviceRemoved = "device-removed"
    /// The capture session stopped.
    case sessionStopped = "session-stopped"
    /// The capture session paused.
    case sessionPaused = "session-paused"
    /// Events were lost (`SYN_DROPPED`) while the key was down.
    case eventsLost = "events-lost"
}

/// A gesture built on the phases.
///
/// A gesture is reported once, on the event that decides it:
/// - `click`: on `ended`, when the press ended before the hold threshold.
/// - `longPress`: on `held`, the moment the hold threshold passes while the key is still
///   down (not at release); that press's `ended` then carries no gesture.
/// - `doubleClick` (only when enabled): on `ended` of a click that began within the
///   double-click window after the previous click of the same button ended. The first click
///   is reported as `click` at once — nothing waits for the window — so a camera takes its
///   photo without delay; an app that wants "double instead of single" undoes or ignores
///   the first click. A third quick click starts over as a `click`.
public enum Gesture: String, Sendable, Hashable, CaseIterable {
    case click
    case longPress = "long-press"
    case doubleClick = "double-click"
}

/// Identifies one press from `began` to its `ended`/`cancelled`, and every trigger, photo,
/// video, hook run and line that comes of it. Ids rise, starting at 1; ``remote`` (0) is a
/// capture no local press started (a trigger message from another station).
public struct PressID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt64) { self.rawValue = value }
    /// Not a local press: a capture another station's trigger message asked for.
    public static let remote = PressID(rawValue: 0)
    public static func < (a: PressID, b: PressID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { String(rawValue) }
}

/// The source device of capture events: who it is, fixed for its lifetime.
///
/// A class so that every event shares one copy (an event costs one retain, not a string
/// copy); immutable, hence `Sendable`.
public final class CaptureDevice: Sendable, Hashable, CustomStringConvertible {
    /// The device's name (`N:` / `EVIOCGNAME`), e.g. `gpio-keys`.
    public let name: String
    /// The node (`/dev/input/eventN`), or the recording's file name in a replay.
    public let node: String
    public let bus: BusType
    public let vendor: UInt16
    public let product: UInt16
    /// The unique id (`uniq`, a Bluetooth address for headsets), if any.
    public let uniq: String?
    /// A BlueZ AVRCP headset: its presses should play the shutter sound.
    public let isHeadset: Bool

    public init(
        name: String, node: String, bus: BusType, vendor: UInt16 = 0, product: UInt16 = 0, uniq: String? = nil,
        isHeadset: Bool = false
    ) {
        self.name = name
        self.node = node
        self.bus = bus
        self.vendor = vendor
        self.product = product
        self.uniq = uniq
        self.isHeadset = isHeadset
    }

    public static func == (a: CaptureDevice, b: CaptureDevice) -> Bool {
        a === b
            || (a.name == b.name && a.node == b.node && a.bus == b.bus && a.vendor == b.vendor
                && a.product == b.product && a.uniq == b.uniq && a.isHeadset == b.isHeadset)
    }
    public func hash(into h: inout Hasher) {
        h.combine(name)
        h.combine(node)
    }
    public var description: String { "\(name) (\(node))" }
}

/// One capture event (docs/behaviour.md#capture-events).
public struct CaptureEvent: Sendable, Hashable, CustomStringConvertible {
    public var phase: CapturePhase
    /// The action after routing: a secondary press reaches the primary handler, as
    /// `primary`, when no secondary handler is installed.
    public var action: CaptureAction
    /// The key, e.g. `KEY_VOLUMEDOWN`.
    public var button: EventCode
    public var device: CaptureDevice
    public var press: PressID
    /// The kernel timestamp of the frame that caused the event; for `held` the instant the
    /// hold threshold passed; for cancellations the time the caller gave.
    public var time: Timestamp
    /// The kernel timestamp of the press's `began` (for `began`, ``time``): every event of a
    /// press carries it, so nothing downstream keeps a press's start of its own.
    public var began: Timestamp
    /// True only for presses from a Bluetooth (AVRCP) headset.
    public var shouldPlaySound: Bool
    /// Set exactly when `phase == .cancelled`.
    public var reason: CancelReason?
    /// Set on the event that decides a gesture (see `Gesture`).
    public var gesture: Gesture?

    public init(
        phase: CapturePhase, action: CaptureAction, button: EventCode, device: CaptureDevice, press: PressID,
        time: Timestamp, began: Timestamp? = nil, shouldPlaySound: Bool = false, reason: CancelReason? = nil,
        gesture: Gesture? = nil
    ) {
        self.phase = phase
        self.action = action
        self.button = button
        self.device = device
        self.press = press
        self.time = time
        self.began = began ?? time
        self.shouldPlaySound = shouldPlaySound
        self.reason = reason
        self.gesture = gesture
    }

    public var description: String {
        var s = "\(time) \(phase.rawValue) \(action.rawValue) \(button.name) \(device.name) press \(press)"
        if shouldPlaySound { s += " sound" }
        if let gesture { s += " \(gesture.rawValue)" }
        if let reason { s += " (\(reason.rawValue))" }
        return s
    }
}
