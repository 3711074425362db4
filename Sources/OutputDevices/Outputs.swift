import Booth
import Vocabulary
import LinuxIO
import Logging
import Synchronization

/// The configured outputs, each following the daemon's events (docs/booth.md#outputs).
///
/// Events arrive from any thread (``follow(_:now:)``) and only update the pure
/// ``OutputFollower``s under a lock; every write happens on the outputs' own thread (an
/// ``IOLoop`` with one timerfd), which wakes for an event or for the next level change and
/// sleeps otherwise. An output that cannot be opened (a line another program holds) is
/// reported once through `onError`; the others go on.
public final class Outputs: Sendable {
    private struct Slot {
        var name: String
        var follower: OutputFollower
        var level: Bool?
    }
    private struct State {
        var slots: [Slot]
        var stopped = false
    }
    private let state: Mutex<State>
    /// The writers, used on the outputs' thread only (and in `stop` after it ended).
    private let writers: Mutex<[String: any OutputWriter]>
    private let loop: IOLoop
    private let timer: IOTimer
    private let logger: Logger
    private let onError: @Sendable (String) -> Void

    /// Opens every output (each failure is one `onError` line) and starts the thread.
    public init(
        _ configurations: [OutputConfiguration], ledRoot: String = "/sys/class/leds", logger: Logger,
        onError: @escaping @Sendable (String) -> Void
    ) throws(SystemError) {
        var writers: [String: any OutputWriter] = [:]
        var slots: [Slot] = []
        for c in configurations {
            do throws(SystemError) {
                switch c.target {
                case .led(let name): writers[c.name] = try LEDWriter(name: name, root: ledRoot)
                case .gpio(let chip, let line, let activeLow):
                    writers[c.name] = try GPIOWriter(chip: chip, line: line, activeLow: activeLow, consumer: "evcapture-" + c.name)
                }
                slots.append(Slot(name: c.name, follower: OutputFollower(rule: c.rule)))
            } catch {
                onError("output \(c.name): \(error)")
            }
        }
        // Writers are only touched on the loop's thread, or after it stopped.
        self.writers = Mutex(writers)
        self.state = Mutex(State(slots: slots))
        self.logger = logger
        self.onError = onError
        let loop = try IOLoop(name: "evc-outputs")
        self.loop = loop
        let holder = Mutex<WeakOutputs>(WeakOutputs())
        timer = try IOTimer(loop: loop) { holder.withLock { $0.value }?.apply() }
        holder.withLock { $0.value = self }
        timer.arm(atMonotonicMicroseconds: monotonicMicroseconds())
    }

    /// The outputs that opened, by name.
    public var names: [String] { state.withLock { $0.slots.map(\.name) } }

    /// Takes an event (any thread; never blocks on a device).
    public func follow(_ event: OutputEvent, now: Int64 = monotonicMicroseconds()) {
        let running = state.withLock { s -> Bool in
            for i in s.slots.indices { s.slots[i].follower.handle(event, now: now) }
            return !s.stopped
        }
        // After stop the timer's descriptor is closed (its number may be another file's).
        if running { timer.arm(atMonotonicMicroseconds: now) }
    }

    /// Every output off, the lines released, the thread ended. Call once.
    public func stop() {
        state.withLock { $0.stopped = true }
        timer.cancel()
        loop.stop()
        writers.withLock { w in
            for (_, writer) in w {
                try? writer.set(false)
                writer.close()
            }
            w.removeAll()
        }
    }

    /// On the outputs' thread: writes the levels that changed, arms the next change.
    private func apply() {
        let now = monotonicMicroseconds()
        let (changes, next) = state.withLock { s -> ([(String, Bool)], Int64?) in
            guard !s.stopped else { return ([], nil) }
            var changes: [(String, Bool)] = []
            var next: Int64?
            for i in s.slots.indices {
                let level = s.slots[i].follower.level(at: now)
                if s.slots[i].level != level {
                    s.slots[i].level = level
                    changes.append((s.slots[i].name, level))
                }
                if let t = s.slots[i].follower.nextChange(after: now) { next = min(next ?? t, t) }
            }
            return (changes, next)
        }
        for (name, level) in changes {
            do throws(SystemError) {
                try writers.withLock { w throws(SystemError) in try w[name]?.set(level) }
            } catch {
                logger.info("output write failed", metadata: ["output.name": "\(name)", "error": "\(error)"])
            }
        }
        if let next { timer.arm(atMonotonicMicroseconds: next) }
    }
}

private struct WeakOutputs {
    weak var value: Outputs?
}

extension Outputs: EventSink {
    /// Follows the daemon's events: the session, presses' `began`, shots, countdowns, recordings.
    public func consume(_ event: DaemonEvent) {
        switch event {
        case .pipeline(let e): follow(e)
        case .outcome(let o, _): follow(o)
        }
    }

    /// Follows an action's outcome: shots, countdowns, recordings.
    public func follow(_ outcome: ActionOutcome) {
        switch outcome {
        case .shot(let time, _): follow(.shot(time: time.microseconds))
        // A shot's moment known ahead is planned on the outputs' own timer (docs/booth.md#outputs).
        case .countdown(let remaining, let shot, _):
            follow(.countdownStarted(start: (shot - .seconds(remaining)).microseconds, shot: shot.microseconds))
            follow(.shotDue(time: shot.microseconds))
        case .countdownCancelled:
            follow(.countdownEnded)
            follow(.shotsCancelled)
        case .timelapse(let report) where report.state == .stopped: follow(.shotsCancelled)
        case .timelapse(let report): if let next = report.next { follow(.shotDue(time: next.microseconds)) }
        case .videoStarted: follow(.recording(true))
        case .videoSaved: follow(.recording(false))
        default: break
        }
    }

    /// Follows a pipeline event: the session, presses' `began`.
    public func follow(_ event: PipelineEvent) {
        switch event {
        case .session(let s) where s.state == .started || s.state == .stopped || s.state == .paused:
            follow(.session(running: s.state == .started))
        case .capture(let e) where e.phase == .began:
            follow(.began(time: e.time.microseconds))
        default: break
        }
    }
}
