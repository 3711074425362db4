/// A control's action: what runs when a person changes the control's value.
///
/// Values are delivered in order, one call at a time, from a single task that prefers the
/// `TaskExecutor` the app passes (or the global concurrent executor when it passes none).
/// To run on an actor instead, hop inside the body: `ControlAction { v in await camera.setZoom(v) }`.
/// Delivery never blocks input handling: values queue in a buffer that keeps the newest
/// `bufferSize`, so a slow action skips stale intermediate values but always sees the last one.
public final class ControlAction: Sendable {
    private let continuation: AsyncStream<Double>.Continuation

    public init(
        executor: (any TaskExecutor)? = nil, bufferSize: Int = 32,
        _ body: @escaping @Sendable (Double) async -> Void
    ) {
        let (stream, continuation) = AsyncStream<Double>.makeStream(bufferingPolicy: .bufferingNewest(bufferSize))
        self.continuation = continuation
        Task(executorPreference: executor) {
            for await value in stream { await body(value) }
        }
    }

    /// Queues `value` for the action.
    public func deliver(_ value: Double) { continuation.yield(value) }

    deinit { continuation.finish() }
}
