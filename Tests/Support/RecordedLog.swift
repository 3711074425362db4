import Logging
import Synchronization

/// A log handler that keeps each line as "LEVEL: MESSAGE key=value ..." (metadata sorted by
/// key), for a test to read what a component logged.
public final class RecordedLog: LogHandler, Sendable {
    private let recorded = Mutex<[String]>([])

    public init() {}

    /// A logger that writes here.
    public var logger: Logger { Logger(label: "evcapture.tests") { _ in self } }

    public var lines: [String] { recorded.withLock { $0 } }

    public var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    public var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    public subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    public func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        recorded.withLock { $0.append("\(event.level): \(event.message)\(fields)") }
    }
}
