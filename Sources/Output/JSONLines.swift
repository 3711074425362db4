@_exported import JSON
import Vocabulary
import LinuxIO

/// The JSON lines (docs/json-lines.md): one object per line, each with `event` first and `time` last
/// (seconds with microseconds, e.g. `12.345678`, the kernel/recording clock), the other
/// fields in a fixed order. Field names are stable; new fields may be added before `time`.
///
/// Objects:
/// - `capture`: `phase` (`began`, `held`, `ended`, `cancelled`), `action`, `button`,
///   `device` (name), `node`, `press`, `sound`, then `gesture` on the event that decides one
///   (`click`/`double-click` on `ended`, `long-press` on `held`) and `reason` when cancelled.
/// - `control`: `control`, `value`, and `raw` for camera-bound controls, plus extras.
/// - `controls`: `state` (`active`, `adjusting`, `idle`, `inactive`, ...) plus extras.
/// - `device`: `change` (`added`, `removed`), `device`, `node`, `bus`, `vendor`, `product`,
///   `uniq` when known, plus extras (roles).
/// - `session`: `state` (`started`, `stopped`, `paused`) plus extras.
/// - `error`: `message`, plus `file` and `line` when the problem is in a file.
public enum JSONLines {
    /// Any object: `event` first, `fields` in order, `time` last.
    public static func object(event: String, time: Timestamp, _ fields: [(String, JSONValue)]) -> String {
        var s = "{\"event\":"
        JSONValue.quote(event, into: &s)
        for (k, v) in fields {
            s += ","
            JSONValue.quote(k, into: &s)
            s += ":"
            v.encode(into: &s)
        }
        s += ",\"time\":" + time.description + "}"
        return s
    }

    public static func capture(_ e: CaptureEvent) -> String {
        var fields: [(String, JSONValue)] = [
            ("phase", .string(e.phase.rawValue)),
            ("action", .string(e.action.rawValue)),
            ("button", .string(e.button.name)),
            ("device", .string(e.device.name)),
            ("node", .string(e.device.node)),
            ("press", .int(Int64(e.press.rawValue))),
            ("sound", .bool(e.shouldPlaySound)),
        ]
        if let g = e.gesture { fields.append(("gesture", .string(g.rawValue))) }
        if let r = e.reason { fields.append(("reason", .string(r.rawValue))) }
        return object(event: "capture", time: e.time, fields)
    }

    public static func control(
        _ control: String, value: Double, raw: Int64? = nil, time: Timestamp, extra: [(String, JSONValue)] = []
    ) -> String {
        var fields: [(String, JSONValue)] = [("control", .string(control)), ("value", .double(value))]
        if let raw { fields.append(("raw", .int(raw))) }
        return object(event: "control", time: time, fields + extra)
    }

    public static func controls(state: String, time: Timestamp, extra: [(String, JSONValue)] = []) -> String {
        object(event: "controls", time: time, [("state", .string(state))] + extra)
    }

    public static func device(
        _ change: String, _ device: CaptureDevice, time: Timestamp, extra: [(String, JSONValue)] = []
    ) -> String {
        var fields: [(String, JSONValue)] = [
            ("change", .string(change)),
            ("device", .string(device.name)),
            ("node", .string(device.node)),
            ("bus", .string(device.bus.description)),
            ("vendor", .string(hex4(device.vendor))),
            ("product", .string(hex4(device.product))),
        ]
        if let u = device.uniq, !u.isEmpty { fields.append(("uniq", .string(u))) }
        return object(event: "device", time: time, fields + extra)
    }

    /// A device's roles as a JSON object `{"KEY_VOLUMEDOWN":"primary",...}`, codes in order.
    public static func roles(_ profile: DeviceProfile) -> JSONValue {
        .object(
            profile.roles.filter { $0.value.role != .ignore }.sorted { $0.key < $1.key }.map { code, a in
                (code.name, .string(a.step == 0 ? a.role.rawValue : "\(a.role.rawValue)\(a.step > 0 ? "+" : "")\(a.step)"))
            })
    }

    public static func session(_ state: String, time: Timestamp, extra: [(String, JSONValue)] = []) -> String {
        object(event: "session", time: time, [("state", .string(state))] + extra)
    }

    public static func error(
        _ message: String, file: String? = nil, line: Int? = nil, time: Timestamp, extra: [(String, JSONValue)] = []
    ) -> String {
        var fields: [(String, JSONValue)] = [("message", .string(message))]
        if let file { fields.append(("file", .string(file))) }
        if let line { fields.append(("line", .int(Int64(line)))) }
        return object(event: "error", time: time, fields + extra)
    }

    static func hex4(_ v: UInt16) -> String {
        let h = String(v, radix: 16)
        return String(repeating: "0", count: 4 - h.count) + h
    }
}

/// The readable line per event that `replay`/`monitor` print without `--json`.
public enum ReadableLines {
    public static func capture(_ e: CaptureEvent) -> String {
        var s = "\(pad(e.time.description, 12)) \(pad(e.phase.rawValue, 9)) \(pad(e.action.rawValue, 9)) "
        s += "\(pad(e.button.name, 16)) press \(pad(String(e.press.rawValue), 3)) \(e.device.name)"
        if e.shouldPlaySound { s += " [sound]" }
        if let g = e.gesture { s += " \(g.rawValue)" }
        if let r = e.reason { s += " (\(r.rawValue))" }
        return s
    }

    /// `s` safe inside one line of text for a terminal, a pipe or the journal: every control
    /// character (C0 with ESC, CR, LF and TAB; DEL; C1) becomes an escape such as `\u{1B}`
    /// (`\n`, `\r`, `\t` for those three), and a backslash doubles, so the line stays one line and
    /// cannot move the cursor, recolour the terminal or forge a line. Devices name themselves
    /// (Bluetooth, uinput): every name and node that reaches text goes through here. JSON
    /// escapes on its own terms (``JSONValue/encode(into:)``) and stays exact.
    public static func escaped(_ s: String) -> String { escapingControlCharacters(s) }

    public static func pad(_ s: String, _ n: Int) -> String {
        s.count >= n ? s : s + String(repeating: " ", count: n - s.count)
    }
}

extension JSONLines {
    /// The JSON line of a pipeline event (docs/json-lines.md).
    public static func line(_ event: PipelineEvent) -> String {
        switch event {
        case .capture(let e):
            return capture(e)
        case .device(let d):
            return device(d.kind.rawValue, d.device, time: d.time, extra: d.profile.map { [("roles", roles($0))] } ?? [])
        case .session(let s):
            var extra: [(String, JSONValue)] = []
            if let r = s.reason { extra.append(("reason", .string(r))) }
            if let c = s.camera { extra.append(("camera", .string(c))) }
            if let n = s.cameraNode { extra.append(("device", .string(n))) }
            return session(s.state.rawValue, time: s.time, extra: extra)
        case .control(let c):
            var extra = c.control.map(displayFields) ?? []
            if c.control?.binding.isDigitalZoom == true { extra.append(("digital", .bool(true))) }
            return control(c.change.control, value: c.change.value, raw: c.change.raw, time: c.change.time, extra: extra)
        case .controlsState(let change, let control, let time):
            return controls(state: change.rawValue, time: time, extra: control.map { [("control", .string($0))] } ?? [])
        case .controlsConfigured(let names, let current, let time):
            var extra: [(String, JSONValue)] = [("controls", .array(names.map { .string($0) }))]
            if let current { extra.append(("control", .string(current))) }
            return controls(state: "configured", time: time, extra: extra)
        case .error(let e):
            var extra: [(String, JSONValue)] = []
            if let code = e.code { extra.append(("code", .string(code))) }
            if let press = e.press { extra.append(("press", .int(Int64(press.rawValue)))) }
            return error(e.message, time: e.time, extra: extra)
        }
    }

    /// What a display needs to draw a control (`evcapture monitor`'s bar): title, range,
    /// prominent values, value format.
    static func displayFields(_ c: Control) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [("title", .string(c.title))]
        switch c.scale {
        case .continuous(let range, let prominent):
            fields += [("min", .double(range.lowerBound)), ("max", .double(range.upperBound))]
            if !prominent.isEmpty { fields.append(("prominent", .array(prominent.map { .double($0) }))) }
        case .discrete(let values):
            fields += [("min", .double(values.first ?? 0)), ("max", .double(values.last ?? 0))]
        case .index:
            fields.append(("display", .string(c.displayValue)))
        }
        fields.append(("format", .string(c.valueFormat)))
        return fields
    }
}

extension ReadableLines {
    /// The readable line of a pipeline event (`replay` and `run` without `--json`), control
    /// characters escaped: names come from devices (``escaped(_:)``).
    public static func line(_ event: PipelineEvent) -> String {
        escaped(unescapedLine(event))
    }

    private static func unescapedLine(_ event: PipelineEvent) -> String {
        let t = pad(event.time.description, 12)
        switch event {
        case .capture(let e):
            return capture(e)
        case .device(let d):
            if let profile = d.profile {
                return "\(t) device added   \(d.device.name) (\(d.device.node)): " + roles(profile)
            }
            return "\(t) device \(pad(d.kind.rawValue, 7)) \(d.device.name) (\(d.device.node))"
        case .session(let s):
            if s.state == .cameraAdded { return "\(t) camera    \(s.camera ?? "?")" }
            return "\(t) session \(s.state.rawValue)" + (s.reason.map { " (\($0))" } ?? "")
        case .control(let c):
            let v = c.change
            let shown = c.control?.displayValue ?? String(v.value)
            return "\(t) control   \(v.control) \(shown)" + (v.raw.map { " (raw \($0))" } ?? "")
                + (c.control?.binding.isDigitalZoom == true ? " (digital)" : "")
                + (v.origin == .external ? " [external]" : "")
        case .controlsState(let change, let control, _):
            return "\(t) controls  \(change.rawValue)" + (control.map { " \($0)" } ?? "")
        case .controlsConfigured(let names, let current, _):
            return "\(t) controls  configured \(names.joined(separator: ", "))" + (current.map { " (current \($0))" } ?? "")
        case .error(let e):
            return "\(t) error     \(e.message)" + (e.press.map { " (press \($0.rawValue))" } ?? "")
        }
    }

    /// A device's roles, `KEY_VOLUMEDOWN=primary REL_X=slider`, codes in order.
    public static func roles(_ profile: DeviceProfile) -> String {
        let roles = profile.roles.filter { $0.value.role != .ignore }.sorted { $0.key < $1.key }
        if roles.isEmpty { return "no roles" }
        return roles.map { code, a in
            "\(code.name)=\(a.step > 0 ? "slider+1" : a.step < 0 ? "slider-1" : a.role.rawValue)"
        }.joined(separator: " ")
    }
}

extension JSONLines {
    /// `press` (a local press; press 0 is a trigger message's command and has none) and
    /// `trigger` (the rig-wide trigger id, when there is one).
    static func origin(press: PressID, trigger: String?) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = []
        if press != .remote { fields.append(("press", .int(Int64(press.rawValue)))) }
        if let trigger { fields.append(("trigger", .string(trigger))) }
        return fields
    }

    /// The `action` (or `error`) line of an action's outcome.
    public static func outcome(_ outcome: ActionOutcome, time: Timestamp) -> String {
        switch outcome {
        case .photoSaved(let r, let press):
            object(
                event: "action", time: time,
                [("action", .string("photo"))] + origin(press: press, trigger: r.trigger) + [("file", .string(r.path))]
                    + frameTime(r.frameTime) + (r.pressOffset.map { [("offset", .double(Double($0) / 1_000_000))] } ?? []))
        case .videoStarted(let press, let trigger):
            object(event: "action", time: time, [("action", .string("video-started"))] + origin(press: press, trigger: trigger))
        case .videoSaved(let r, let press):
            object(event: "action", time: time, videoFields(r, press: press))
        case .videoRecovered(let r):
            object(
                event: "action", time: time,
                [
                    ("action", .string("video-recovered")), ("file", .string(r.path)), ("frames", .int(Int64(r.frames))),
                    ("format", .string(r.format.rawValue)), ("from", .string(r.temporaryName)),
                ])
        case .hookFinished(let name, let result, let press):
            object(
                event: "action", time: time,
                [
                    ("action", .string("hook")), ("press", .int(Int64(press.rawValue))), ("hook", .string(name)),
                    ("result", .string("\(result)")),
                ])
        case .soundStarted(let file, let press):
            object(
                event: "action", time: time,
                [("action", .string("sound")), ("press", .int(Int64(press.rawValue))), ("file", .string(file))])
        case .skipped(let action, let press, let reason):
            object(
                event: "action", time: time,
                [("action", .string(action)), ("press", .int(Int64(press.rawValue))), ("skipped", .string(reason))])
        case .failed(let failure, let press):
            error(
                failure.description, time: time,
                extra: [("code", .string(failure.code))] + (press.map { origin(press: $0, trigger: nil) } ?? []))
        case .countdown, .countdownCancelled, .shot, .burstSaved, .timelapse:
            boothLine(outcome, time: time)
        case .triggerReceived(let command, let trigger, let topic):
            object(
                event: "action", time: time,
                [
                    ("action", .string("trigger")), ("command", .string(command.rawValue)), ("trigger", .string(trigger)),
                    ("topic", .string(topic)),
                ])
        }
    }
}

extension JSONLines {
    /// The fields of a `video` action line, appended one by one: as one expression of `+`s
    /// over literals and optionals, Swift 6.2's type checker gives up on it.
    static func videoFields(_ r: VideoResult, press: PressID) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [("action", .string("video"))]
        fields += origin(press: press, trigger: r.trigger)
        fields += [("file", .string(r.path)), ("frames", .int(Int64(r.frames)))]
        fields += frameTime(r.frameTime)
        fields.append(("format", .string(r.format.rawValue)))
        if let encoder = r.encoder { fields.append(("encoder", .string(encoder))) }
        fields += [("duration", .double((r.duration * 1000).rounded() / 1000)), ("skipped", .int(Int64(r.skipped)))]
        if r.undecodable > 0 { fields.append(("undecodable", .int(Int64(r.undecodable)))) }
        if let stop = r.stoppedBy { fields += [("stopped", .string(stop.code)), ("reason", .string(stop.description))] }
        return fields
    }

    /// `frame_time`: a frame's kernel timestamp in seconds, the clock of capture events' `time`.
    static func frameTime(_ time: Timestamp?) -> [(String, JSONValue)] {
        guard let time else { return [] }
        return [("frame_time", .double(Double(time.microseconds) / 1_000_000))]
    }
}

extension ReadableLines {
    /// The readable line of an action's outcome, control characters escaped.
    public static func outcome(_ outcome: ActionOutcome, time: Timestamp) -> String {
        let t = pad(time.description, 12)
        let line: String =
            switch outcome {
            case .photoSaved(let r, let press):
                "\(t) photo     \(r.path) (press \(press)" + (r.frameTime.map { ", frame \($0)" } ?? "") + ")"
                    + (r.trigger.map { " trigger \($0)" } ?? "")
            case .videoStarted(let press, let trigger):
                "\(t) video     recording (press \(press))" + (trigger.map { " trigger \($0)" } ?? "")
            case .videoSaved(let r, let press):
                "\(t) video     \(r.path), \(r.frames) frames (press \(press))"
                    + (r.skipped > 0 ? ", \(r.skipped) skipped" : "") + (r.stoppedBy.map { ", stopped: \($0.code)" } ?? "")
            case .videoRecovered(let r): "\(t) video     \(r.path), \(r.frames) frames, recovered from \(r.temporaryName)"
            case .hookFinished(let name, let result, let press): "\(t) hook      \(name): \(result) (press \(press))"
            case .soundStarted(let file, let press): "\(t) sound     \(file) (press \(press))"
            case .failed(let error, let press): "\(t) error     \(error)" + (press.map { " (press \($0))" } ?? "")
            case .skipped(let action, let press, let reason): "\(t) skipped   \(action): \(reason) (press \(press))"
            case .countdown, .countdownCancelled, .shot, .burstSaved, .timelapse: "\(t) " + boothText(outcome)
            case .triggerReceived(let command, let trigger, let topic): "\(t) trigger   \(command.rawValue) trigger \(trigger) (\(topic))"
            }
        return escaped(line)
    }
}

extension PipelineEvent {
    /// The event's JSON line (``JSONLines/line(_:)``).
    public var json: String { JSONLines.line(self) }
    /// The event's readable line (``ReadableLines/line(_:)``).
    public var text: String { ReadableLines.line(self) }
}
