// What reading an evdev node gives, and what a reader asks of the kernel: the value types
// of an evdev device's input stream (the device itself is Evdev's).

/// The events of one frame: everything up to a `SYN_REPORT`.
public struct Frame: Hashable, Sendable {
    /// The events, without the closing `SYN_REPORT`.
    public var events: [InputEvent]
    /// The time of the closing `SYN_REPORT`.
    public var time: Timestamp
    /// Set when events were lost (`SYN_DROPPED`): this frame is then not what the device
    /// sent but the difference libevdev found between its old state and the device's.
    public var resync: Resync?
    /// The closing `SYN_REPORT`'s value: 0 for what the device sent, 1 for frames the input
    /// core made itself (autorepeat, and the key releases it sends when a device is
    /// unregistered or reset).
    package var reportValue: Int32

    public init(events: [InputEvent], time: Timestamp, resync: Resync? = nil, reportValue: Int32 = 0) {
        self.events = events
        self.time = time
        self.resync = resync
        self.reportValue = reportValue
    }

    /// The input core released keys that were still down (`input_dev_release_keys`: key-ups
    /// in a frame closed by `SYN_REPORT` 1): the device is being unplugged or was reset
    /// (resume). Nobody released them; presses they would end did not end normally.
    public var releasedByKernel: Bool {
        reportValue == 1 && resync == nil && events.contains { $0.type == .key && $0.value == 0 }
    }

    /// The events with the `SYN_REPORT` appended: what the device wrote.
    package var eventsWithReport: [InputEvent] { events + [InputEvent(time: time, .synReport, reportValue)] }

    /// Splits a flat event list (a recording) into frames. Events after the last
    /// `SYN_REPORT` are dropped, as the kernel would. A `SYN_DROPPED` becomes a frame with
    /// an empty ``Resync`` (a recording cannot tell what was lost), and the rest of its
    /// frame is dropped (libevdev's rule).
    public static func split(_ events: [InputEvent]) -> [Frame] {
        var frames: [Frame] = [], pending: [InputEvent] = []
        var dropping = false
        for e in events {
            if e.type == .syn && e.code == EventCode.synDropped.code {
                frames.append(Frame(events: [], time: e.time, resync: Resync(changedKeys: [:], keysDown: [])))
                pending = []
                dropping = true
            } else if e.isSynReport {
                if !dropping { frames.append(Frame(events: pending, time: e.time, reportValue: e.value)) }
                pending = []
                dropping = false
            } else if !dropping {
                pending.append(e)
            }
        }
        return frames
    }
}

/// What a resync after `SYN_DROPPED` found.
public struct Resync: Hashable, Sendable {
    /// Keys whose state changed while events were lost: true if now down.
    package var changedKeys: [EventCode: Bool]
    /// Every key down after the resync (the device's real state).
    public var keysDown: Set<EventCode>

    public init(changedKeys: [EventCode: Bool], keysDown: Set<EventCode>) {
        self.changedKeys = changedKeys
        self.keysDown = keysDown
    }
}

/// Which of a device's events a reader gets (`EvdevDevice.deliver(_:)` in Evdev).
public enum EventDelivery: Hashable, Sendable {
    /// Everything (the kernel's default).
    case all
    /// Nothing: the reader is never woken (a `SYN_DROPPED` would still come, but with
    /// nothing queued the buffer cannot overflow).
    case none
    /// Of the keys only these (other keys, and the scan codes, LEDs and repeats that come
    /// with typing, are not delivered); relative and absolute axes and switches as they come.
    case keys(Set<EventCode>)
}
