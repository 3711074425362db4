import FoundationEssentials
#if canImport(Glibc)
import Glibc
import Vocabulary
#endif

/// A file name template for photos and videos.
///
/// Tokens: `{date}` (`20261121`), `{time}` (`235959.123`, local time with milliseconds),
/// `{press}` (the press id), `{action}` (`primary`/`secondary`/`remote`), `{kind}` (`photo`/`video`),
/// `{trigger}` (the trigger id every station's file of one moment shares; `press<N>` for a
/// press that triggered no rig).
/// Anything else is copied. The extension is part of the pattern.
public struct FileNamePattern: Sendable, Hashable, CustomStringConvertible {
    public let pattern: String

    public static let defaultPhoto = try! FileNamePattern("evcapture-{date}-{time}-press{press}.jpg")
    static let defaultVideo = try! FileNamePattern("evcapture-{date}-{time}-press{press}.mp4")
    static let tokens: Set<String> = ["date", "time", "press", "action", "kind", "trigger"]

    /// Fails for a `/`, an unknown or unclosed token, or an empty or hidden name.
    public init(_ pattern: String) throws(PatternError) {
        guard !pattern.isEmpty else { throw PatternError(pattern: pattern, problem: "is empty") }
        guard !pattern.contains("/" as Character) else {
            throw PatternError(pattern: pattern, problem: "contains '/'; only a file name is allowed")
        }
        guard !pattern.hasPrefix(".") else { throw PatternError(pattern: pattern, problem: "starts with '.' (hidden file)") }
        var rest = Substring(pattern)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else {
                throw PatternError(pattern: pattern, problem: "has an unclosed '{'")
            }
            let token = String(rest[rest.index(after: open)..<close])
            guard Self.tokens.contains(token) else {
                throw PatternError(
                    pattern: pattern, problem: "has an unknown token {\(token)} (known: {date} {time} {press} {action} {kind} {trigger})")
            }
            rest = rest[rest.index(after: close)...]
        }
        self.pattern = pattern
    }

    public struct PatternError: Error, CustomStringConvertible, Sendable, Equatable {
        public var pattern: String
        public var problem: String
        public var description: String { "file name pattern \"\(pattern)\" \(problem)" }
    }

    /// The name for a file made at `time` (seconds since 1970) for `press`. `trigger` must
    /// be a valid trigger id (letters, digits, `.`, `_`, `-`: never a path).
    public func name(time: Double, press: PressID, action: CaptureAction?, kind: String, trigger: String? = nil) -> String {
        let totalMillis = Int64((time * 1000).rounded())
        var seconds = time_t(totalMillis / 1000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let millis = Int(totalMillis % 1000)
        func pad(_ v: Int32, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        let date = pad(parts.tm_year + 1900, 4) + pad(parts.tm_mon + 1, 2) + pad(parts.tm_mday, 2)
        let clock = pad(parts.tm_hour, 2) + pad(parts.tm_min, 2) + pad(parts.tm_sec, 2) + "." + pad(Int32(millis), 3)
        return
            pattern
            .replacing("{date}", with: date)
            .replacing("{time}", with: clock)
            .replacing("{press}", with: String(press.rawValue))
            .replacing("{action}", with: CaptureAction.name(action))
            .replacing("{kind}", with: kind)
            .replacing("{trigger}", with: trigger ?? "press\(press)")
    }

    public var description: String { pattern }
}

extension CaptureAction {
    /// How an action is written where a name is needed (file names, hooks, lines): the
    /// button's action, or `remote` for a trigger message from another station.
    public static func name(_ action: CaptureAction?) -> String { action?.rawValue ?? "remote" }
}
