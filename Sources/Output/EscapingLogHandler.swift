import Logging

/// Escapes control characters in every message and metadata value (``ReadableLines/escaped(_:)``)
/// before `inner` writes them: log lines carry device names, which devices choose themselves,
/// and a name must not break a log line in two or send escape sequences to a terminal.
public struct EscapingLogHandler<Inner: LogHandler>: LogHandler {
    public var inner: Inner

    public init(_ inner: Inner) { self.inner = inner }

    public func log(event: LogEvent) {
        var escaped = event
        escaped.message = Logger.Message(stringLiteral: ReadableLines.escaped(event.message.description))
        escaped.metadata = event.metadata.map(Self.escaped)
        inner.log(event: escaped)
    }

    static func escaped(_ metadata: Logger.Metadata) -> Logger.Metadata { metadata.mapValues(escaped) }

    static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let s): .string(ReadableLines.escaped(s))
        case .stringConvertible(let c): .string(ReadableLines.escaped(c.description))
        case .dictionary(let d): .dictionary(escaped(d))
        case .array(let a): .array(a.map(escaped))
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map(Self.escaped) }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = Self.escaped(newValue) }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }
}
