import Foundation

/// The text of `evcapture monitor`: capture events as lines, and a one-line picture of the
/// active control redrawn in place. Pure: lines in, text out, so it is tested without a
/// terminal or a daemon.
///
/// Fields read from the daemon's JSON lines (others are ignored, missing ones tolerated):
/// - every object: `event`, `time`
/// - `capture`: `phase`, `action`, `button`, `device` (a string, or an object with `name`),
///   `press`, `sound`, `reason`
/// - `control`: `control` (its title; or `title`), `value`, `min`, `max`, `prominent`
///   (an array of numbers), `format` (printf style, e.g. `%.1f×`), `raw`
/// - `controls`: `state` (`active`, `adjusting`, `inactive`, ...)
/// - `error`: `message` (or `error`); `device`, `session`: any fields, shown compactly
public struct MonitorRenderer: Sendable {
    /// Redraw the control line in place with `\r` and ANSI clear-line (a terminal); else
    /// every update is a line of its own (a pipe, a log).
    public var isTerminal: Bool
    /// Columns available.
    public var width: Int
    /// The control line now on screen (terminal mode), without escape codes.
    public private(set) var controlLine: String?

    static let clearLine = "\r\u{1B}[2K"

    public init(isTerminal: Bool, width: Int = 80) {
        self.isTerminal = isTerminal
        self.width = max(20, width)
    }

    /// The text to write for one JSON line (possibly empty).
    public mutating func consume(line: String) -> String {
        guard let data = line.data(using: .utf8),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else {
            return emit("? \(line.prefix(width - 2))")
        }
        switch object["event"] as? String {
        case "control":
            let rendered = Self.controlText(object, width: width)
            if isTerminal {
                controlLine = rendered
                return Self.clearLine + rendered
            }
            return rendered + "\n"
        case "controls":
            let state = object["state"] as? String ?? "?"
            if isTerminal && state == "inactive" {
                let had = controlLine != nil
                controlLine = nil
                return had ? Self.clearLine : ""
            }
            return isTerminal ? "" : "controls \(state)\n"
        default:
            return emit(Self.eventText(object))
        }
    }

    /// An event line above the control line, which is redrawn below it.
    private func emit(_ text: String) -> String {
        guard isTerminal else { return text + "\n" }
        return Self.clearLine + text + "\n" + (controlLine ?? "")
    }

    static func eventText(_ o: [String: Any]) -> String {
        let time = (o["time"] as? Double).map { Self.clock($0) } ?? (o["time"] as? String) ?? ""
        let event = o["event"] as? String ?? "?"
        var parts = [time, event].filter { !$0.isEmpty }
        switch event {
        case "capture":
            parts += [o["phase"], o["action"], o["button"]].compactMap { $0 as? String }
            if let press = o["press"] as? Int { parts.append("press \(press)") }
            if let device = deviceName(o["device"]) { parts.append("\"\(device)\"") }
            if o["sound"] as? Bool == true { parts.append("(sound)") }
            if let reason = o["reason"] as? String { parts.append("reason: \(reason)") }
        case "error":
            if let m = (o["message"] ?? o["error"]) as? String { parts.append(m) }
        default:
            let skip: Set<String> = ["event", "time"]
            for key in o.keys.sorted() where !skip.contains(key) {
                if let d = key == "device" ? deviceName(o[key]) : nil {
                    parts.append("device=\"\(d)\"")
                } else {
                    parts.append("\(key)=\(scalar(o[key]!))")
                }
            }
        }
        return parts.joined(separator: " ")
    }

    static func controlText(_ o: [String: Any], width: Int) -> String {
        let title = (o["title"] as? String) ?? (o["control"] as? String) ?? "control"
        if number(o["value"]) == nil, let on = o["value"] as? Bool { return String("\(title)  \(on ? "on" : "off")".prefix(width)) }
        let value = number(o["value"]) ?? 0
        let range: ClosedRange<Double>? = {
            guard let lo = number(o["min"]), let hi = number(o["max"]), hi >= lo else { return nil }
            return lo...hi
        }()
        let prominent = (o["prominent"] as? [Any] ?? []).compactMap(number)
        if let range {
            return renderControlLine(
                title: title, value: value, range: range, prominent: prominent, format: o["format"] as? String, width: width)
        }
        // A picker or a control without a range: title and value only.
        let shown = (o["value"] as? String) ?? formatValue(value, o["format"] as? String)
        return String("\(title)  \(shown)".prefix(width))
    }

    static func deviceName(_ d: Any?) -> String? {
        if let s = d as? String { return s }
        if let o = d as? [String: Any] { return o["name"] as? String }
        return nil
    }

    /// A JSON number (not a boolean: on Linux `1 is Bool` holds for bridged numbers, so
    /// the NSNumber's own type decides).
    static func number(_ v: Any?) -> Double? {
        guard let v, type(of: v) != Bool.self, let n = v as? NSNumber else { return nil }
        if n.objCType.pointee == CChar(UInt8(ascii: "c")) || n.objCType.pointee == CChar(UInt8(ascii: "B")) { return nil }
        return n.doubleValue
    }

    static func scalar(_ v: Any) -> String {
        if let s = v as? String { return s.contains(" ") ? "\"\(s)\"" : s }
        if let data = try? JSONSerialization.data(withJSONObject: v, options: [.fragmentsAllowed, .sortedKeys]) {
            return String(decoding: data, as: UTF8.self)
        }
        return "\(v)"
    }

    static func clock(_ t: Double) -> String {
        var seconds = time_t(t.rounded(.down))
        var parts = tm()
        localtime_r(&seconds, &parts)
        let ms = Int((t - t.rounded(.down)) * 1000)
        return String(format: "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min, parts.tm_sec, ms)
    }
}

/// One line: `Zoom  [=====|====O-----|-----]  2.5×`.
///
/// The bar spans `range`; `=` fills up to the value, `O` marks the value, `|` marks each
/// prominent value (where the value is not), `-` is the rest. The whole line fits `width`
/// columns (the title is shortened first).
public func renderControlLine(
    title: String, value: Double, range: ClosedRange<Double>, prominent: [Double] = [], format: String? = nil,
    width: Int = 80
) -> String {
    let valueText = formatValue(value, format)
    let minimumBar = 5
    // "title [bar] value": 2 brackets + 2 spaces.
    var titleText = title
    let fixed = valueText.count + 4
    if titleText.count + fixed + minimumBar > width {
        titleText = String(titleText.prefix(max(0, width - fixed - minimumBar)))
    }
    let barWidth = max(minimumBar, width - fixed - titleText.count)
    func position(_ v: Double) -> Int {
        let span = range.upperBound - range.lowerBound
        let f = span > 0 ? (min(max(v, range.lowerBound), range.upperBound) - range.lowerBound) / span : 0
        return Int((f * Double(barWidth - 1)).rounded())
    }
    let at = position(value)
    var bar = (0..<barWidth).map { $0 < at ? Character("=") : Character("-") }
    for p in prominent where range.contains(p) { bar[position(p)] = "|" }
    bar[at] = "O"
    return "\(titleText) [\(String(bar))] \(valueText)"
}

/// Formats a value with a printf-style `format` holding one numeric conversion (`%.1f×`,
/// `%+.1f EV`, `%d`, `%g`); anything else (including `%@`, `%s`, several conversions) falls
/// back to `%g` with the format's text dropped, so a bad format cannot crash the monitor.
public func formatValue(_ value: Double, _ format: String?) -> String {
    guard let format else { return String(format: "%g", value) }
    let spec = /%([-+ 0#]*)(\d*)(\.\d+)?([fFeEgGdi])/
    let conversions = format.replacingOccurrences(of: "%%", with: "").matches(of: /%/).count
    guard conversions == 1, let match = format.firstMatch(of: spec) else { return String(format: "%g", value) }
    let kind = match.output.4
    if kind == "d" || kind == "i" {
        let intFormat = format.replacingCharacters(in: match.range, with: "%\(match.output.1)\(match.output.2)ld")
        return String(format: intFormat, Int(value.rounded()))
    }
    return String(format: format, value)
}
