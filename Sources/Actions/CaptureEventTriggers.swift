import Vocabulary

extension ActionTrigger {
    /// The action triggers of one capture event, in the order actions should see them:
    /// the gesture it decides (click, long press, double click) before its phase, so a
    /// click's photo is queued before the press's `ended`. A `held` event has no phase of its
    /// own for actions, only its long press. Each carries the event's kernel time and its
    /// press's `began`.
    public static func triggers(for event: CaptureEvent) -> [ActionTrigger] {
        func make(_ kind: Kind) -> ActionTrigger {
            ActionTrigger(
                kind: kind, action: event.action, button: event.button.name, deviceName: event.device.name,
                deviceNode: event.device.node, press: event.press, time: event.time, reason: event.reason?.rawValue,
                shouldPlaySound: event.shouldPlaySound, pressTime: event.began)
        }
        var out: [ActionTrigger] = []
        switch event.gesture {
        case .click: out.append(make(.click))
        case .longPress: out.append(make(.longPress))
        case .doubleClick: out.append(make(.doubleClick))
        case nil: break
        }
        switch event.phase {
        case .began: out.append(make(.began))
        case .ended: out.append(make(.ended))
        case .cancelled: out.append(make(.cancelled))
        case .held: break
        }
        return out
    }
}

extension ActionRunner {
    /// Queues the actions of one capture event; returns at once (see ``handle(_:)-(ActionTrigger)``).
    public func handle(_ event: CaptureEvent) {
        for trigger in ActionTrigger.triggers(for: event) { handle(trigger) }
    }
}
