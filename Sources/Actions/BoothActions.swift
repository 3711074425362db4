import Booth
import Vocabulary
import LinuxIO
import Logging
import Synchronization

/// What a button's photo trigger does beyond one photo (docs/booth.md).
public struct BoothBinding: Sendable, Hashable {
    /// Seconds of countdown before the shot (0: none; at most ``Countdown/maximumSeconds``).
    public var countdown: Int
    /// Photos per shot (1: one), `burstBefore` of them from before the shot's moment.
    public var burst: Int
    public var burstBefore: Int
    /// A timelapse instead of a photo: the trigger starts it, the next one stops it, with a
    /// shot every `timelapse` µs.
    public var timelapse: Int64?

    public init(countdown: Int = 0, burst: Int = 1, burstBefore: Int = 0, timelapse: Int64? = nil) {
        self.countdown = countdown
        self.burst = burst
        self.burstBefore = burstBefore
        self.timelapse = timelapse
    }

    /// One photo at the press, nothing else: the photo can be prepared from `began`.
    var isPlain: Bool { countdown == 0 && burst == 1 && timelapse == nil }
}

/// The booth's clock work: countdowns and timelapses on a thread of their own (an
/// ``IOLoop`` with one timerfd), so a tick never waits for the input thread, a photo or a
/// hook. The decisions are the pure ``Countdown`` and ``TimelapseSchedule``; this only
/// sleeps until their next deadline and hands what is due to its runner. Booth's types count
/// CLOCK_MONOTONIC µs as plain numbers (it depends on nothing); times cross here as ``Timestamp``.
///
/// The clock outlives a runner: when a camera appears the daemon makes a new runner for it,
/// which takes the clock over (``ActionRunner/init(configuration:logger:continuing:onOutcome:)``)
/// with the countdowns and timelapses running, so a timelapse started before any camera
/// was there goes on with it.
final class BoothClock: Sendable {
    enum Step: Sendable {
        case countdown(Countdown.Step, ActionTrigger)
        case timelapseShot(number: Int, time: Timestamp, ActionTrigger)
    }
    private struct Lapse {
        var schedule: TimelapseSchedule
        var trigger: ActionTrigger
    }
    private struct State {
        var countdowns: [PressID: (Countdown, ActionTrigger)] = [:]
        var lapses: [PressID: Lapse] = [:]
        var stopped = false
    }
    /// How long after each deadline the clock wakes (µs): at a shot's moment the outputs act
    /// first (docs/booth.md#outputs). Their pulse is planned on their own timer for that moment;
    /// the clock's work then (the `shot` line, queueing the photo, which wakes the photo worker
    /// and the line writers) would otherwise take the CPU from them on a small board. The photo
    /// is still the frame nearest the moment, and the lines still carry the moment.
    static let afterTheOutputs: Int64 = 2_000
    private let state = Mutex(State())
    private let loop: IOLoop?
    private let timer: IOTimer?
    /// The runner the steps go to: the newest one that took the clock over. Weak, so the
    /// clock keeps no runner alive.
    private let owner = Mutex(WeakRunner())

    init(logger: Logger) {
        var loop: IOLoop?
        var timer: IOTimer?
        let holder = Mutex<BoothClock?>(nil)
        do {
            let l = try IOLoop(name: "evc-booth")
            loop = l
            timer = try IOTimer(loop: l) { holder.withLock { $0 }?.fire() }
        } catch {
            logger.error("booth clock unavailable: countdowns and timelapses will not run", metadata: ["error": "\(error)"])
        }
        self.loop = loop
        self.timer = timer
        holder.withLock { $0 = self }
    }

    /// Steps go to `runner` from now on; a shot already queued on the runner before it
    /// still counts here, since both share this clock.
    func handOver(to runner: ActionRunner) {
        owner.withLock { $0.value = runner }
    }

    /// Whether `runner` is the one the steps go to (only that one stops the clock).
    func isOwned(by runner: ActionRunner) -> Bool {
        owner.withLock { $0.value === runner }
    }

    /// Starts a countdown for `trigger`'s press at `now`.
    func startCountdown(_ trigger: ActionTrigger, seconds: Int, now: Timestamp) {
        let steps = state.withLock { s -> [Step] in
            var c = Countdown(seconds: seconds, start: now.microseconds)
            let due = c.advance(to: now.microseconds).map { Step.countdown($0, trigger) }
            if !c.isFinished { s.countdowns[trigger.press] = (c, trigger) }
            return due
        }
        deliver(steps)
    }

    /// A press at `now` cancels every countdown running; returns whether there was one.
    func cancelCountdowns(at now: Timestamp) -> Bool {
        let steps = state.withLock { s -> [Step] in
            var out: [Step] = []
            for (press, (c, trigger)) in s.countdowns.sorted(by: { $0.key < $1.key }) {
                var c = c
                out += c.cancel(at: now.microseconds).map { .countdown($0, trigger) }
                s.countdowns[press] = nil
            }
            return out
        }
        deliver(steps)
        return !steps.isEmpty
    }

    /// Starts a timelapse for `trigger` (its first shot at `now`), or stops the one its
    /// action runs; returns which, the press that started it and its schedule.
    func toggleTimelapse(_ trigger: ActionTrigger, interval: Int64, start: Timestamp) -> (
        started: Bool, press: PressID, schedule: TimelapseSchedule
    ) {
        let result = state.withLock { s -> (Bool, PressID, TimelapseSchedule) in
            if let (press, lapse) = s.lapses.first(where: { $0.value.trigger.action == trigger.action }) {
                s.lapses[press] = nil
                return (false, press, lapse.schedule)
            }
            let schedule = TimelapseSchedule(start: start.microseconds, interval: interval)
            s.lapses[trigger.press] = Lapse(schedule: schedule, trigger: trigger)
            return (true, trigger.press, schedule)
        }
        // The first shot is due now: on the clock's thread, like every other.
        rearm()
        return result
    }

    /// Counts a timelapse shot's result; returns the schedule (nil: not a timelapse's press).
    func record(press: PressID, taken: Bool) -> TimelapseSchedule? {
        state.withLock { s in
            guard s.lapses[press] != nil else { return nil }
            if taken { s.lapses[press]!.schedule.recordTaken() } else { s.lapses[press]!.schedule.recordMissed() }
            return s.lapses[press]!.schedule
        }
    }

    /// Whether a frame at `frameTime` is the photo of a shot due at `moment` of `press`: for
    /// a timelapse, only a frame nearer its own slot than any other (a shot taken late, after
    /// the camera came back, would otherwise get a frame of another moment).
    func accepts(press: PressID, frameTime: Timestamp, moment: Timestamp) -> Bool {
        state.withLock { s in
            guard let lapse = s.lapses[press] else { return true }
            return abs(frameTime.microseconds - moment.microseconds) * 2 <= lapse.schedule.interval
        }
    }

    /// Stops the clock (again: nothing).
    func stop() {
        let wasStopped = state.withLock { s in
            defer { s = State(stopped: true) }
            return s.stopped
        }
        guard !wasStopped else { return }
        timer?.cancel()
        loop?.stop()
    }

    /// On the clock's thread: everything due now, then the timer for the next deadline.
    private func fire() {
        let now = monotonicNow().microseconds
        let steps = state.withLock { s -> [Step] in
            var out: [Step] = []
            for press in s.countdowns.keys.sorted() {
                var (c, trigger) = s.countdowns[press]!
                out += c.advance(to: now).map { .countdown($0, trigger) }
                s.countdowns[press] = c.isFinished ? nil : (c, trigger)
            }
            for press in s.lapses.keys.sorted() {
                let trigger = s.lapses[press]!.trigger
                out += s.lapses[press]!.schedule.due(at: now).map {
                    .timelapseShot(number: $0.number, time: Timestamp(microseconds: $0.time), trigger)
                }
            }
            return out
        }
        deliver(steps)
        rearm()
    }

    private func rearm() {
        let (stopped, next) = state.withLock { s -> (Bool, Int64?) in
            let deadlines = s.countdowns.values.compactMap(\.0.deadline) + s.lapses.values.map(\.schedule.nextTime)
            return (s.stopped, deadlines.min())
        }
        // After stop the timer's descriptor is closed (its number may be another file's).
        if !stopped { timer?.arm(atMonotonicMicroseconds: next.map { $0 + Self.afterTheOutputs }) }
    }

    private func deliver(_ steps: [Step]) {
        let runner = steps.isEmpty ? nil : owner.withLock { $0.value }
        for step in steps { runner?.boothStep(step) }
        rearm()
    }
}
