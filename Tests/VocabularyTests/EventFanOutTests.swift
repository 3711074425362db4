import Testing
import Synchronization
import Vocabulary

/// The daemon's emit (docs/architecture.md#events-and-sinks): every event to every sink, in
/// the wiring's order; an app's observer sees the pipeline's events only.
@Suite struct EventFanOutTests {
    final class Log: Sendable {
        let lines = Mutex<[String]>([])
    }
    final class Recorder: EventSink {
        let name: String
        let log: Log
        init(_ name: String, _ log: Log) {
            self.name = name
            self.log = log
        }
        func consume(_ event: DaemonEvent) {
            let what =
                switch event {
                case .pipeline(.error(let e)): "error \(e.message)"
                case .pipeline: "pipeline"
                case .outcome(.shot(_, let press), let t): "shot \(press) at \(t.microseconds)"
                case .outcome: "outcome"
                }
            log.lines.withLock { $0.append("\(name): \(what)") }
        }
    }

    @Test func everySinkGetsEveryEventInTheWiringsOrder() {
        let log = Log()
        let seen = Log()
        let observer = PipelineObserver { event in
            if case .error(let e) = event { seen.lines.withLock { $0.append(e.message) } }
        }
        let fanOut = EventFanOut([Recorder("outputs", log), observer, Recorder("lines", log)])
        fanOut.emit(.error(ErrorReport("no camera", time: Timestamp(microseconds: 1))))
        fanOut.emit(.shot(time: Timestamp(microseconds: 5_000), press: 7), at: Timestamp(microseconds: 6_000))
        #expect(
            log.lines.withLock { $0 } == [
                "outputs: error no camera", "lines: error no camera", "outputs: shot 7 at 6000", "lines: shot 7 at 6000",
            ])
        // the observer is given the pipeline's event, not the outcome
        #expect(seen.lines.withLock { $0 } == ["no camera"])
    }

    @Test func noSinksIsNothing() {
        EventFanOut([]).emit(.shot(time: Timestamp(microseconds: 0), press: .remote), at: Timestamp(microseconds: 0))
        #expect(EventFanOut([]).sinks.isEmpty)
    }
}
