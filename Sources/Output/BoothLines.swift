import JSON
import Vocabulary

extension JSONLines {
    /// The booth's lines (docs/booth.md, docs/json-lines.md): `countdown`, the countdown's
    /// `cancelled`, `shot`, a burst's `action` line and `timelapse`.
    static func boothLine(_ outcome: ActionOutcome, time: Timestamp) -> String {
        switch outcome {
        case .countdown(let remaining, let shot, let press):
            // Its own second's time (`shot_time` minus `remaining`), not when it was written.
            return object(
                event: "countdown", time: shot - .seconds(remaining),
                [("press", .int(Int64(press.rawValue))), ("remaining", .int(Int64(remaining)))] + seconds("shot_time", shot))
        case .countdownCancelled(let remaining, let press):
            return object(
                event: "countdown", time: time,
                [
                    ("state", .string("cancelled")), ("reason", .string("countdown-cancelled")), ("press", .int(Int64(press.rawValue))),
                    ("remaining", .int(Int64(remaining))),
                ])
        case .shot(let moment, let press):
            return object(event: "shot", time: time, origin(press: press, trigger: nil) + seconds("shot_time", moment))
        case .burstSaved(let photos, let press):
            let list: [JSONValue] = photos.map { p in .object([("file", .string(p.path))] + frameTime(p.frameTime)) }
            return object(
                event: "action", time: time,
                [("action", .string("burst"))] + origin(press: press, trigger: photos.first?.trigger)
                    + [("count", .int(Int64(photos.count))), ("photos", .array(list))])
        case .timelapse(let r):
            var fields: [(String, JSONValue)] = [
                ("state", .string(r.state.rawValue)), ("press", .int(Int64(r.press.rawValue))), ("count", .int(Int64(r.count))),
                ("missed", .int(Int64(r.missed))),
            ]
            if let p = r.photo { fields += [("file", .string(p.path))] + frameTime(p.frameTime) }
            if let next = r.next { fields += seconds("next_time", next) }
            return object(event: "timelapse", time: time, fields)
        default:
            preconditionFailure("not a booth outcome")
        }
    }

    static func seconds(_ key: String, _ time: Timestamp) -> [(String, JSONValue)] {
        [(key, .double(Double(time.microseconds) / 1_000_000))]
    }
}

extension ReadableLines {
    static func boothText(_ outcome: ActionOutcome) -> String {
        switch outcome {
        case .countdown(let remaining, _, let press): "countdown \(remaining) (press \(press))"
        case .countdownCancelled(let remaining, let press): "countdown cancelled with \(remaining) s to go (press \(press))"
        case .shot(let moment, let press): "shot      \(moment) (press \(press))"
        case .burstSaved(let photos, let press):
            "burst     \(photos.count) photos: \(photos.map(\.path).joined(separator: ", ")) (press \(press))"
        case .timelapse(let r):
            "timelapse \(r.state.rawValue), \(r.count) taken, \(r.missed) missed" + (r.photo.map { ": \($0.path)" } ?? "")
                + " (press \(r.press))"
        default: ""
        }
    }
}
