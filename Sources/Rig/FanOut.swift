import Vocabulary

/// A station's own presses as rig triggers: a primary click becomes a `photo` trigger, a
/// primary long press `video-start` and its end (`ended` or `cancelled`) `video-stop`, each
/// with one trigger id and the wall-clock time the button went down.
///
/// Pure: capture events in (with their wall-clock time), decisions out. The station acts on
/// its own press at once (its own bindings, with the same id); the messages go to the rig.
public struct FanOutPolicy: Sendable {
    public let station: String
    /// False (`fan-out = "none"`): no messages and no trigger ids, only press times.
    public let sendsTriggers: Bool
    /// The trigger id of each press recording video on the rig.
    private var recording: [PressID: String] = [:]

    public init(station: String, sendsTriggers: Bool) {
        self.station = station
        self.sendsTriggers = sendsTriggers
    }

    /// What one capture event means for the rig.
    public struct Decision: Sendable, Hashable {
        /// The id the station's own actions for this event carry (nil: none).
        public var trigger: String?
        /// When the press's button went down, wall clock.
        public var pressTime: Double?
        /// To publish on the fan-out topic.
        public var messages: [TriggerMessage]

        public init(trigger: String?, pressTime: Double?, messages: [TriggerMessage]) {
            self.trigger = trigger
            self.pressTime = pressTime
            self.messages = messages
        }
    }

    /// `wallTime`: the event's own time on the wall clock (its kernel timestamp moved by the
    /// current difference between the clocks); the press went down the event's
    /// `time − began` before it.
    public mutating func handle(_ event: CaptureEvent, wallTime: Double) -> Decision {
        let press = event.press
        let pressTime = wallTime - Double(event.time.microseconds - event.began.microseconds) / 1_000_000
        if event.phase == .began { return Decision(trigger: nil, pressTime: pressTime, messages: []) }
        var decision = Decision(trigger: nil, pressTime: pressTime, messages: [])
        guard sendsTriggers, event.action == .primary else { return decision }
        switch (event.phase, event.gesture) {
        case (.ended, .click?):
            let id = Self.id(station: station, pressTime: pressTime, press: press)
            decision.trigger = id
            decision.messages = [TriggerMessage(command: .photo, trigger: id, time: pressTime, from: station)]
        case (.held, .longPress?):
            let id = Self.id(station: station, pressTime: pressTime, press: press)
            recording[press] = id
            decision.trigger = id
            decision.messages = [TriggerMessage(command: .videoStart, trigger: id, time: pressTime, from: station)]
        case (.ended, _), (.cancelled, _):
            if let id = recording.removeValue(forKey: press) {
                decision.trigger = id
                decision.messages = [TriggerMessage(command: .videoStop, trigger: id, time: pressTime, from: station)]
            }
        default:
            break
        }
        return decision
    }

    /// `<station>-<milliseconds since 1970 of the press>-<press id>`: unique across the rig
    /// (station names are) and across restarts (the time).
    public static func id(station: String, pressTime: Double, press: PressID) -> String {
        "\(station)-\(Int64((pressTime * 1000).rounded()))-\(press)"
    }
}
