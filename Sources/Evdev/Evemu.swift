#if canImport(Glibc)
import LinuxIO
import Glibc
#endif
import Vocabulary

/// An evemu recording that cannot be read: `file:line: problem` (``FileLineError``).
public typealias EvemuError = FileLineError

// Reading what `evemu-record` writes into the floor's ``EvemuRecording``.
extension EvemuRecording {
    /// Parses the text of a recording. `file` names it in errors.
    ///
    /// Accepted: `#` comments (any content), blank lines, leading whitespace, CRLF line
    /// ends, trailing `# ...` comments on `E:` lines, `A:` lines with or without the
    /// resolution column, and the `L:`/`S:` (LED/switch state) lines newer evemu writes.
    /// `B:` lines for the same type continue that type's bitmask; so do repeated `P:` lines.
    /// `E:` times may repeat but never decrease: an event before the one above it is an error.
    public static func parse(_ text: String, file: String) throws(EvemuError) -> EvemuRecording {
        var parser = Parser(file: file)
        var lineNumber = 0
        // "\r\n" is one Character in Swift, so both separators are named.
        for var line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNumber += 1
            if line.last == "\r" { line = line.dropLast() }
            try parser.consume(line, at: lineNumber)
        }
        return try parser.finish(lines: lineNumber)
    }

    /// Reads and parses a recording file.
    public static func load(path: String) throws(EvemuError) -> EvemuRecording {
        let text: String
        do {
            text = try readWholeFile(path)
        } catch {
            throw EvemuError(file: path, line: 0, problem: "cannot read: \(error.description)")
        }
        return try parse(text, file: path)
    }
}

private struct Parser {
    let file: String
    var name: String?
    var id: (bus: UInt16, vendor: UInt16, product: UInt16, version: UInt16)?
    var codes: Set<EventCode> = []
    var absInfo: [UInt16: AbsInfo] = [:]
    var properties: Set<UInt16> = []
    var propertyBitOffset = 0
    var maskBitOffset: [UInt16: Int] = [:]
    var events: [InputEvent] = []
    /// The last `E:` line's time and line number: times may repeat, never go back.
    var lastEvent: (time: Timestamp, line: Int)?

    init(file: String) { self.file = file }

    func error(_ line: Int, _ problem: String) -> EvemuError {
        EvemuError(file: file, line: line, problem: problem)
    }

    mutating func consume(_ raw: Substring, at n: Int) throws(EvemuError) {
        let line = raw.drop { $0 == " " || $0 == "\t" }
        if line.isEmpty || line.first == "#" { return }
        guard line.count >= 2, line.dropFirst().first == ":" else {
            throw error(n, "expected a line starting with N:, I:, P:, B:, A:, E: or #, got \"\(line.prefix(40))\"")
        }
        let kind = line.first!
        let rest = line.dropFirst(2)
        if kind == "N" {
            let value = rest.drop { $0 == " " || $0 == "\t" }
            let trimmed = String(value.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
            guard !trimmed.isEmpty else { throw error(n, "empty device name in N: line") }
            guard name == nil else { throw error(n, "second N: line (one device per recording)") }
            name = trimmed
            return
        }
        // Everything else is numbers; a trailing comment (evemu puts one on E: lines) goes.
        let body = rest.firstIndex(of: "#").map { rest[..<$0] } ?? rest
        let fields = body.split(whereSeparator: { $0 == " " || $0 == "\t" })
        switch kind {
        case "I": try parseID(fields, n)
        case "P": try parseProperties(fields, n)
        case "B": try parseMask(fields, n)
        case "A": try parseAbs(fields, n)
        case "E": try parseEvent(fields, n)
        case "L", "S":
            // LED / switch state lines: "L: code value". Validated, not needed here.
            guard fields.count == 2, UInt16(fields[0], radix: 16) != nil, Int32(fields[1]) != nil else {
                throw error(n, "\(kind): line needs a hex code and a value")
            }
        default:
            throw error(n, "unknown line type \"\(kind):\"")
        }
    }

    func hex16(_ s: Substring, _ what: String, _ n: Int) throws(EvemuError) -> UInt16 {
        guard let v = UInt16(s, radix: 16) else { throw error(n, "\(what) \"\(s)\" is not a 16-bit hex number") }
        return v
    }

    func byte(_ s: Substring, _ n: Int) throws(EvemuError) -> UInt8 {
        guard s.count <= 2, let v = UInt8(s, radix: 16) else { throw error(n, "\"\(s)\" is not a hex byte") }
        return v
    }

    func int32(_ s: Substring, _ what: String, _ n: Int) throws(EvemuError) -> Int32 {
        guard let v = Int32(s) else { throw error(n, "\(what) \"\(s)\" is not a 32-bit integer") }
        return v
    }

    mutating func parseID(_ f: [Substring], _ n: Int) throws(EvemuError) {
        guard f.count == 4 else { throw error(n, "I: line needs bus, vendor, product and version (4 hex numbers), got \(f.count)") }
        guard id == nil else { throw error(n, "second I: line") }
        id = (try hex16(f[0], "bus", n), try hex16(f[1], "vendor", n), try hex16(f[2], "product", n), try hex16(f[3], "version", n))
    }

    mutating func parseProperties(_ f: [Substring], _ n: Int) throws(EvemuError) {
        for s in f {
            let b = try byte(s, n)
            for bit in 0..<8 where b & (1 << bit) != 0 { properties.insert(UInt16(propertyBitOffset + bit)) }
            propertyBitOffset += 8
        }
    }

    mutating func parseMask(_ f: [Substring], _ n: Int) throws(EvemuError) {
        guard let first = f.first else { throw error(n, "B: line without an event type") }
        let type = EventType(try hex16(first, "event type", n))
        guard type <= .max else { throw error(n, "event type 0x\(first) is above EV_MAX") }
        let maxCode = type.maxCode
        var offset = maskBitOffset[type.rawValue, default: 0]
        for s in f.dropFirst() {
            let b = try byte(s, n)
            for bit in 0..<8 where b & (1 << bit) != 0 {
                let code = offset + bit
                // evemu pads masks to whole 8-byte lines; a set bit past the type's maximum
                // cannot come from a kernel device.
                guard maxCode >= 0, code <= maxCode else {
                    throw error(n, "code \(code) is above the largest \(type.name) code (\(maxCode))")
                }
                codes.insert(EventCode(type, UInt16(code)))
            }
            offset += 8
        }
        maskBitOffset[type.rawValue] = offset
    }

    mutating func parseAbs(_ f: [Substring], _ n: Int) throws(EvemuError) {
        guard f.count == 5 || f.count == 6 else {
            throw error(n, "A: line needs code, min, max, fuzz, flat and resolution, got \(f.count) fields")
        }
        let code = try hex16(f[0], "axis code", n)
        guard code <= EventType.abs.maxCode else { throw error(n, "axis code 0x\(f[0]) is above ABS_MAX") }
        let info = AbsInfo(
            minimum: try int32(f[1], "minimum", n), maximum: try int32(f[2], "maximum", n),
            fuzz: try int32(f[3], "fuzz", n), flat: try int32(f[4], "flat", n),
            resolution: f.count == 6 ? try int32(f[5], "resolution", n) : 0)
        guard info.minimum <= info.maximum else { throw error(n, "axis minimum \(info.minimum) is above its maximum \(info.maximum)") }
        absInfo[code] = info
        codes.insert(.abs(code))
    }

    mutating func parseEvent(_ f: [Substring], _ n: Int) throws(EvemuError) {
        guard f.count == 4 else { throw error(n, "E: line needs time, type, code and value, got \(f.count) fields") }
        let time = try timestamp(f[0], n)
        // Replay merges devices' frames by time: an event dated before the one above it would
        // be sorted into the past, splitting its frame, and a long press could vanish.
        if let last = lastEvent, time < last.time {
            throw error(n, "time \(time) is before \(last.time) of the event on line \(last.line) (a recording never goes back in time)")
        }
        lastEvent = (time, n)
        let type = EventType(try hex16(f[1], "event type", n))
        guard type <= .max else { throw error(n, "event type 0x\(f[1]) is above EV_MAX") }
        let code = try hex16(f[2], "event code", n)
        guard type.maxCode >= 0, Int(code) <= type.maxCode else {
            throw error(n, "event code 0x\(f[2]) is above the largest \(type.name) code")
        }
        events.append(InputEvent(time: time, type: type, code: code, value: try int32(f[3], "value", n)))
    }

    func timestamp(_ s: Substring, _ n: Int) throws(EvemuError) -> Timestamp {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let sec = Int64(parts[0]), sec >= 0,
            (1...6).contains(parts[1].count), let frac = Int64(parts[1]), frac >= 0
        else { throw error(n, "time \"\(s)\" is not seconds.microseconds") }
        // Microseconds in an Int64: found by fuzzing, a longer number overflowed (a trap).
        guard sec <= Int64.max / 1_000_000 - 1 else { throw error(n, "time \"\(s)\" is too large") }
        var usec = frac
        for _ in parts[1].count..<6 { usec *= 10 }
        return Timestamp(microseconds: sec * 1_000_000 + usec)
    }

    func finish(lines: Int) throws(EvemuError) -> EvemuRecording {
        guard let name else { throw error(1, "no device name (N: line); is this an evemu-record file?") }
        guard let id else { throw error(1, "no device id (I: line)") }
        let description = DeviceDescription(
            name: name, bus: BusType(rawValue: id.bus), vendor: id.vendor, product: id.product,
            version: id.version, codes: codes, absInfo: absInfo, properties: properties)
        return EvemuRecording(description: description, events: events)
    }
}
