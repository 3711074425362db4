/// Everything the daemon tells its sinks, in one vocabulary (docs/architecture.md#events-and-sinks):
/// the core's pipeline events, and the outcomes of the actions they started.
public enum DaemonEvent: Sendable {
    case pipeline(PipelineEvent)
    /// An action's outcome, at `time` (CLOCK_MONOTONIC).
    case outcome(ActionOutcome, at: Timestamp)
}

/// A consumer of the daemon's events: the line writer (stdout, the socket, MQTT, the live
/// view's `/events`), the GPIO and LED outputs, an app's observer. `consume` is called on the
/// thread that emits (the I/O thread for pipeline events, an action's worker for outcomes) and
/// must return at once: a sink queues, and does its work on a thread or task of its own.
public protocol EventSink: Sendable {
    func consume(_ event: DaemonEvent)
}

extension EventSink {
    public func emit(_ event: PipelineEvent) { consume(.pipeline(event)) }
    public func emit(_ outcome: ActionOutcome, at time: Timestamp) { consume(.outcome(outcome, at: time)) }
}

/// The daemon's `emit`: each event to every sink, in the order they were given, fixed when
/// the daemon is wired (no lock on the input path).
public struct EventFanOut: EventSink {
    public let sinks: [any EventSink]
    public init(_ sinks: [any EventSink]) { self.sinks = sinks }
    public func consume(_ event: DaemonEvent) {
        for sink in sinks { sink.consume(event) }
    }
}

/// A closure as a sink (an app's observer of pipeline events).
public struct PipelineObserver: EventSink {
    let body: @Sendable (PipelineEvent) -> Void
    public init(_ body: @escaping @Sendable (PipelineEvent) -> Void) { self.body = body }
    public func consume(_ event: DaemonEvent) {
        if case .pipeline(let e) = event { body(e) }
    }
}
