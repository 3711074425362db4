#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

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
    private(set) var controlLine: String?

    static let clearLine = "\r\u{1B}[2K"

    public init(isTerminal: Bool, width: Int = 80) {
        self.isTerminal = isTerminal
        self.width = max(20, width)
    }

    /// The text to write for one JSON line (possibly empty).
    public mutating func consume(line: String) -> String {
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(line.utf8)) else {
            return emit("? \(line.prefix(width - 2))")
        }
        switch object["event"]?.string {
        case "control":
            let rendered = ReadableLines.escaped(Self.controlText(object, width: width))
            if isTerminal {
                controlLine = rendered
                return Self.clearLine + rendered
            }
            return rendered + "\n"
        case "controls":
            let state = object["state"]?.string ?? "?"
            if isTerminal && state == "inactive" {
                let had = controlLine != nil
                controlLine = nil
                return had ? Self.clearLine : ""
            }
            return isTerminal ? "" : "controls \(ReadableLines.escaped(state))\n"
        default:
            return emit(Self.eventText(object))
        }
    }

    /// An event line above the control line, which is redrawn below it. Its text comes from
    /// the socket (device names among it): control characters are escaped.
    private func emit(_ raw: String) -> String {
        let text = ReadableLines.escaped(raw)
        guard isTerminal else { return text + "\n" }
        return Self.clearLine + text + "\n" + (controlLine ?? "")
    }

    static func eventText(_ o: [String: JSONValue]) -> String {
        let time = o["time"]?.number.map { Self.clock($0) } ?? o["time"]?.string ?? ""
        let event = o["event"]?.string ?? "?"
        var parts = [time, event].filter { !$0.isEmpty }
        switch event {
        case "capture":
            parts += [o["phase"], o["action"], o["button"]].compactMap { $0?.string }
            if case .int(let press)? = o["press"] { parts.append("press \(press)") }
            if let device = deviceName(o["device"]) { parts.append("\"\(device)\"") }
            if o["sound"] == .bool(true) { parts.append("(sound)") }
            if let reason = o["reason"]?.string { parts.append("reason: \(reason)") }
        case "error":
            if let m = (o["message"] ?? o["error"])?.string { parts.append(m) }
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

    static func controlText(_ o: [String: JSONValue], width: Int) -> String {
        let title = o["title"]?.string ?? o["control"]?.string ?? "control"
        if case .bool(let on)? = o["value"] { return String("\(title)  \(on ? "on" : "off")".prefix(width)) }
        let value = o["value"]?.number ?? 0
        let range: ClosedRange<Double>? = {
            guard let lo = o["min"]?.number, let hi = o["max"]?.number, hi >= lo else { return nil }
            return lo...hi
        }()
        let prominent: [Double] = if case .array(let a)? = o["prominent"] { a.compactMap(\.number) } else { [] }
        if let range {
            return renderControlLine(
                title: title, value: value, range: range, prominent: prominent, format: o["format"]?.string, width: width)
        }
        // A picker or a control without a range: title and value only.
        let shown = o["value"]?.string ?? formatValue(value, o["format"]?.string)
        return String("\(title)  \(shown)".prefix(width))
    }

    static func deviceName(_ d: JSONValue?) -> String? {
        switch d {
        case .string(let s)?: s
        case .object(let fields)?: fields.first { $0.0 == "name" }?.1.string
        default: nil
        }
    }

    /// A value as compact JSON (objects with sorted keys); a string bare, quoted if it has spaces.
    static func scalar(_ v: JSONValue) -> String {
        if let s = v.string { return s.contains(" " as Character) ? "\"\(s)\"" : s }
        return v.encoded
    }

    static func clock(_ t: Double) -> String {
        var seconds = time_t(t.rounded(.down))
        var parts = tm()
        localtime_r(&seconds, &parts)
        let ms = Int((t - t.rounded(.down)) * 1000)
        return String(cFormat: "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min, parts.tm_sec, Int32(ms))
    }
}

/// One line: `Zoom  [=====|====O-----|-----]  2.5×`.
///
/// The bar spans `range`; `=` fills up to the value, `O` marks the value, `|` marks each
/// prominent value (where the value is not), `-` is the rest. The whole line fits `width`
/// columns (the title is shortened first).
func renderControlLine(
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
    guard let format else { return String(cFormat: "%g", value) }
    // The one `%` not in a `%%` must start the conversion: vsnprintf would read any other
    // conversion's argument from a va_list that holds a single number.
    var conversion: String.Index?
    var i = format.startIndex
    while i < format.endIndex {
        let next = format.index(after: i)
        if format[i] == "%" {
            if next < format.endIndex && format[next] == "%" {
                i = format.index(after: next)
                continue
            }
            guard conversion == nil else { return String(cFormat: "%g", value) }
            conversion = i
        }
        i = next
    }
    let spec = /%([-+ 0#]*)(\d*)(\.\d+)?([fFeEgGdi])/
    guard let conversion, let match = format[conversion...].prefixMatch(of: spec) else { return String(cFormat: "%g", value) }
    let kind = match.output.4
    if kind == "d" || kind == "i" {
        var intFormat = format
        intFormat.replaceSubrange(match.range, with: "%\(match.output.1)\(match.output.2)ld")
        return String(cFormat: intFormat, Int(value.rounded()))
    }
    return String(cFormat: format, value)
}
