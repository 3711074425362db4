import Booth
import Recording
import Vocabulary
import Logging
import Synchronization
import Frames

/// The runner as its booth clock and outcome filter see it: weakly, so neither keeps it alive.
struct WeakRunner {
    weak var value: ActionRunner?
}

extension ActionRunner {
    /// Whether the booth takes `trigger` (a photo trigger) instead of one photo now: a
    /// countdown starts, a timelapse starts or stops, or the press already cancelled a
    /// countdown and so takes nothing (docs/booth.md).
    func boothTakes(_ trigger: ActionTrigger, _ booth: BoothBinding) -> Bool {
        if countdownCancellers.withLock({ $0.contains(trigger.press) }) { return true }
        guard let clock = self.booth else { return false }
        let now = trigger.time
        if let interval = booth.timelapse {
            // On the camera's frames: shots a whole number of frame intervals apart each
            // get a frame at their very moment, never one half a frame away either side.
            let start = photoFrames?.frameTime(nearest: now) ?? now
            let (started, press, schedule) = clock.toggleTimelapse(trigger, interval: interval, start: start)
            onOutcome(
                .timelapse(
                    TimelapseReport(
                        state: started ? .started : .stopped, press: press,
                        count: schedule.taken, missed: schedule.missed, next: started ? Timestamp(microseconds: schedule.nextTime) : nil)))
            return true
        }
        if booth.countdown > 0 {
            clock.startCountdown(trigger, seconds: booth.countdown, now: now)
            return true
        }
        return false
    }

    /// What the booth clock found due (on its thread): countdown lines and hooks, the shots.
    func boothStep(_ step: BoothClock.Step) {
        switch step {
        case .countdown(.tick(let remaining, _, let shot), let trigger):
            onOutcome(.countdown(remaining: remaining, shot: Timestamp(microseconds: shot), press: trigger.press))
            var t = trigger
            t.kind = .countdown
            t.remaining = remaining
            t.time = monotonicNow()
            runHooks(for: t)
        case .countdown(.shot(let time), let trigger):
            shoot(trigger, at: Timestamp(microseconds: time))
        case .timelapseShot(_, let time, let trigger):
            shoot(trigger, at: time)
        case .countdown(.cancelled(let remaining, _), let trigger):
            onOutcome(.countdownCancelled(remaining: remaining, press: trigger.press))
            var t = trigger
            t.kind = .cancelled
            t.reason = "countdown-cancelled"
            t.remaining = remaining
            t.time = monotonicNow()
            runHooks(for: t)
        }
    }

    /// A countdown's or a timelapse's shot at `time`.
    private func shoot(_ trigger: ActionTrigger, at time: Timestamp) {
        // The shot is reported here, at its moment on the clock's thread, so an output
        // following it (a flash) never waits behind the photo worker's previous photo.
        onOutcome(.shot(time: time, press: trigger.press))
        // The photo is the frame nearest the shot's time, whatever the photo moment.
        var t = trigger
        t.kind = .click
        t.pressTime = time
        t.time = time
        t.rigMoment = nil
        queuePhoto(t, shotReported: true)
    }

    /// A running timelapse's `shot` or `missed` line for a photo's outcome of its press.
    func timelapseOutcome(for outcome: ActionOutcome) -> ActionOutcome? {
        guard let booth else { return nil }
        let (press, photo): (PressID, PhotoResult?)
        switch outcome {
        case .photoSaved(let p, let pr): (press, photo) = (pr, p)
        case .burstSaved(let ps, let pr): (press, photo) = (pr, ps.first)
        case .failed(_, let pr?): (press, photo) = (pr, nil)
        default: return nil
        }
        guard let schedule = booth.record(press: press, taken: photo != nil) else { return nil }
        return .timelapse(
            TimelapseReport(
                state: photo == nil ? .missed : .shot, press: press, count: schedule.taken, missed: schedule.missed,
                next: Timestamp(microseconds: schedule.nextTime), photo: photo))
    }

    /// A burst (on the photo worker's thread): `burst` frames around `moment`, each saved
    /// as a photo with its own frame time, reported in one `burst` outcome.
    func takeBurst(_ trigger: ActionTrigger, _ booth: BoothBinding, moment: Timestamp, request: CaptureRequest, prepared: PreparedPhotos?) {
        prepared?.discard(press: trigger.press)
        guard let settings = configuration.capture, let frames else {
            onOutcome(.failed(.noCamera, press: trigger.press))
            return
        }
        var selection = BurstSelection<RingFrame>(moment: moment.microseconds, count: booth.burst, before: booth.burstBefore)
        // From as far back as the ring reaches: the frames before the moment are in it.
        let lookback = moment - .seconds(settings.ring.seconds)
        do {
            _ = try frames.frames(from: lookback, timeout: settings.frameTimeout) { ring in
                selection.offer(ring, time: ring.time.microseconds)
            }
        } catch let error as SystemError {
            onOutcome(.failed(.recording(.camera(error)), press: trigger.press))
            return
        } catch {
            onOutcome(.failed(.recording(.camera(SystemError(code: .timedOut, context: "burst: \(error)"))), press: trigger.press))
            return
        }
        var saved: [PhotoResult] = []
        for ring in selection.frames {
            switch Result(catching: { () throws(RecordingError) in try Photo.save(ring, settings, request) }) {
            case .success(let photo):
                saved.append(photo)
                fileWritten(.photo, photo.path, frameTime: photo.frameTime, for: trigger)
            case .failure(let error):
                onOutcome(.failed(.recording(error), press: trigger.press))
            }
        }
        if !saved.isEmpty { onOutcome(.burstSaved(saved, press: trigger.press)) }
    }
}
