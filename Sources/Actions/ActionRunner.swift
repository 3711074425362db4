import Recording
import Runtime
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import Synchronization
import Vocabulary
import Booth
import Frames

/// Runs photo, video, hook and sound actions for capture triggers, off the input path.
///
/// The guarantee: ``handle(_:)`` only puts work into a queue and returns; it never blocks
/// and never waits for the camera, the disk or a child process, so a slow action cannot
/// delay or drop a press. Each kind of action has its own queue and worker:
///
/// - photos: one at a time, in order; each request gets its own file, also when it arrives
///   while the previous one is still being written. A press on a button whose click takes
///   a photo has its photo prepared from `began` (the frame nearest the press, encoded and
///   written to a hidden `.part` file; ``PreparedPhotos``): the click commits it under its
///   final name, anything else removes it.
/// - video: one recording at a time (one camera); it starts on the long press and stops on
///   that press's `ended`/`cancelled`. Stop requests are never dropped.
/// - hooks: up to `maxConcurrentHooks` at once, each bounded by its timeout.
/// - sound: started without waiting for the player to finish.
///
/// A full queue (`queueLimit` waiting requests) drops the new request and reports a
/// `queue-full` failure instead of waiting.
public final class ActionRunner: ActionTriggerSink {
    public let configuration: ActionsConfiguration
    let logger: Logger
    let onOutcome: @Sendable (ActionOutcome) -> Void

    enum VideoCommand: Sendable {
        case start(ActionTrigger)
        case stop(ActionTrigger)
        case stopAll
    }

    /// Whether a stop request ends the recording started by `started`: a local press stops
    /// its own recording; a trigger message (press 0) stops the recording of its trigger id,
    /// or without an id any recording a trigger message started.
    static func stop(_ stop: ActionTrigger, ends started: ActionTrigger) -> Bool {
        if stop.press != .remote { return started.press == stop.press && started.triggerID == stop.triggerID }
        guard let id = stop.triggerID else { return started.press == .remote }
        return started.triggerID == id
    }

    private let photos: AsyncStream<PhotoCommand>.Continuation
    /// Photo requests (clicks, trigger messages) queued and not yet taken by the worker: at
    /// most `queueLimit`, as for the other queues.
    let pendingPhotos = Atomic<Int>(0)
    /// "action queue full" at most every 10 s, with the count dropped meanwhile: a flood of
    /// requests (a script POSTing to the live view) cannot flood the log.
    private let queueFullLog = Mutex(LogThrottle(interval: .seconds(10)))
    /// The clock that throttle reads (``monotonicNow()``; a hand-driven one in tests).
    private let logClock: @Sendable () -> Timestamp
    /// Presses whose photo is being prepared (at most `queueLimit`).
    let preparations: PhotoPreparations
    /// Where photos' frames come from: the ring (`frames`), or a fake in tests.
    let photoFrames: (any NearestFrameSource)?
    private let videos: AsyncStream<VideoCommand>.Continuation
    private let hooks: AsyncStream<(ExecHook, ActionTrigger)>.Continuation
    private let sounds: AsyncStream<ActionTrigger>.Continuation
    let pendingVideoStarts = Atomic<Int>(0)
    /// Trigger messages' `video-stop`s queued and not yet taken by the worker: at most
    /// `queueLimit`, so a burst of them cannot fill the queue a local press's stop needs.
    let pendingRemoteStops = Atomic<Int>(0)
    /// The capture stream the runner was handed, when there is a capture device; the
    /// daemon's live view reads the same ring.
    public let frames: FrameSource?
    /// Presses whose video start was queued and whose stop was not: only they get a stop, so
    /// the video queue holds at most `queueLimit` starts, their stops and `stopAll`.
    private let videoPresses = Mutex<Set<PressID>>([])
    /// Video commands queued so far, and those the full queue dropped (tests).
    let videoCommandsQueued = Atomic<Int>(0)
    let videoCommandsDropped = Atomic<Int>(0)
    /// The digital zoom factor photos are cropped to (1: none); set by the zoom control of a
    /// camera without `zoom_absolute`.
    let digitalZoom = Mutex<Double>(1)
    /// Countdowns and timelapses (docs/booth.md), when a binding has either.
    let booth: BoothClock?
    /// Presses that cancelled a countdown: their own click starts nothing.
    let countdownCancellers = Mutex<Set<PressID>>([])
    private let workers: Mutex<[Task<Void, Never>]>
    private let executors: [ThreadExecutor]

    /// `frames`: the capture stream the photos and videos take their frames from, made by
    /// whoever makes the runner (the daemon: `CaptureSettings.captureStream`), nil without a
    /// capture device; the runner starts and stops it with the session and presses
    /// (docs/behaviour.md#the-moment-of-the-press) and stops it at ``shutdown()``.
    /// `continuing`: the runner this one replaces (the daemon's, when a camera appears): its
    /// countdowns and timelapses go on here (docs/booth.md#timelapse); shut it down after.
    public convenience init(
        configuration: ActionsConfiguration, frames: FrameSource?, logger: Logger,
        continuing previous: ActionRunner? = nil, onOutcome: @escaping @Sendable (ActionOutcome) -> Void
    ) {
        self.init(
            configuration: configuration, frames: frames, logger: logger, continuing: previous, onOutcome: onOutcome,
            photoFrames: nil)
    }

    /// `photoFrames`: where photos' frames come from instead of the capture stream (tests);
    /// `logClock`: the clock of the "action queue full" line's throttle (tests drive one by hand).
    init(
        configuration: ActionsConfiguration, frames: FrameSource? = nil, logger: Logger,
        continuing previous: ActionRunner? = nil,
        onOutcome: @escaping @Sendable (ActionOutcome) -> Void, photoFrames: (any NearestFrameSource)?,
        logClock: @escaping @Sendable () -> Timestamp = monotonicNow
    ) {
        self.configuration = configuration
        self.logger = logger
        self.logClock = logClock
        // A timelapse's photos and failures also count as its shots and misses.
        let runner = Mutex<WeakRunner>(WeakRunner())
        self.onOutcome = { outcome in
            onOutcome(outcome)
            if let lapse = runner.withLock({ $0.value })?.timelapseOutcome(for: outcome) { onOutcome(lapse) }
        }
        booth =
            configuration.bindings.values.contains { $0.booth.countdown > 0 || $0.booth.timelapse != nil }
            ? previous?.booth ?? BoothClock(logger: logger) : nil
        self.frames = frames
        self.photoFrames = photoFrames ?? frames
        let limit = max(1, configuration.queueLimit)
        preparations = PhotoPreparations(limit: limit)
        // Bounded by construction: at most `limit` photo requests (pendingPhotos), and per
        // press in `preparations` one prepare and one discard.
        let (photoStream, photoIn) = AsyncStream.makeStream(of: PhotoCommand.self, bufferingPolicy: .bufferingOldest(3 * limit + 1))
        // Bounded by construction: at most `limit` starts (pendingVideoStarts), their stops
        // (videoPresses), `limit` trigger messages' stops (pendingRemoteStops) and `stopAll`;
        // the buffer is never the limit.
        let (videoStream, videoIn) = AsyncStream.makeStream(of: VideoCommand.self, bufferingPolicy: .bufferingOldest(3 * limit + 2))
        let (hookStream, hookIn) = AsyncStream.makeStream(of: (ExecHook, ActionTrigger).self, bufferingPolicy: .bufferingOldest(limit))
        let (soundStream, soundIn) = AsyncStream.makeStream(of: ActionTrigger.self, bufferingPolicy: .bufferingOldest(limit))
        photos = photoIn
        videos = videoIn
        hooks = hookIn
        sounds = soundIn
        workers = Mutex([])
        // Each worker on a thread of its own: photos and videos wait for camera frames and
        // hooks for children, and that must never occupy the cooperative pool the input
        // pipeline runs on (2 threads on a 2-core board).
        let executors = ["evc-photos", "evc-videos", "evc-hooks", "evc-sounds"].map { ThreadExecutor(name: $0) }
        self.executors = executors
        let tasks = [
            Task(executorPreference: executors[0]) { [self] in await runPhotos(photoStream) },
            Task(executorPreference: executors[1]) { [self] in await runVideo(videoStream) },
            Task(executorPreference: executors[2]) { [self] in await runHooks(hookStream) },
            Task(executorPreference: executors[3]) { [self] in for await t in soundStream { playSound(t) } },
        ]
        workers.withLock { $0 = tasks }
        runner.withLock { $0.value = self }
        booth?.handOver(to: self)
    }

    // MARK: - Input side (never blocks)

    /// Whether any button takes photos or videos.
    var capturesFrames: Bool {
        configuration.capture != nil && configuration.bindings.values.contains { $0.photoOn != nil || $0.videoOnLongPress }
    }

    /// The capture session started or stopped: in `always` mode the capture stream runs
    /// while it runs (and photo or video actions are configured); it stops with it in every
    /// mode.
    /// The digital zoom for the next photos (1: the whole frame).
    public func setDigitalZoom(_ factor: Double) {
        digitalZoom.withLock { $0 = Swift.max(1, factor) }
    }

    public func sessionChanged(running: Bool) {
        guard let frames else { return }
        if running {
            if configuration.capture?.streamMode == .always && capturesFrames { frames.start() }
        } else {
            frames.stop()
        }
    }

    public func handle(_ trigger: ActionTrigger) {
        let binding = trigger.action.flatMap { configuration.bindings[$0] } ?? .none
        var capturing = false
        if trigger.kind == .began {
            // A press during a countdown cancels it (docs/booth.md#countdown).
            if let booth, booth.cancelCountdowns(at: trigger.time) {
                countdownCancellers.withLock { _ = $0.insert(trigger.press) }
            }
            // `began` prepares the camera (docs/behaviour.md#the-moment-of-the-press): a cold
            // stream starts now, not at the click.
            if binding.photoOn != nil || binding.videoOnLongPress, configuration.capture?.streamMode == .onPress {
                frames?.start()
            }
            // ... and its photo, should the press be a click, is prepared from now on.
            if preparesPhotos(binding), preparations.begin(trigger.press) {
                queuePhotoCommand(.prepare(press: trigger.press, moment: trigger.time))
            }
        }
        if let photoOn = binding.photoOn, trigger.kind == photoOn {
            capturing = true
            if !boothTakes(trigger, binding.booth) { queuePhoto(trigger) }
        }
        if trigger.kind == .ended || trigger.kind == .cancelled { countdownCancellers.withLock { _ = $0.remove(trigger.press) } }
        // Not a click (after the click's own trigger, which claimed it): the prepared photo goes.
        if trigger.kind == .longPress || trigger.kind == .ended || trigger.kind == .cancelled,
            preparations.discard(trigger.press)
        {
            queuePhotoCommand(.discard(press: trigger.press))
        }
        if binding.videoOnLongPress {
            switch trigger.kind {
            case .longPress:
                capturing = true
                if !reserve(pendingVideoStarts, limit: configuration.queueLimit) {
                    onOutcome(.failed(.queueFull(kind: "video", press: trigger.press), press: trigger.press))
                } else {
                    videoPresses.withLock { _ = $0.insert(trigger.press) }
                    queueVideo(.start(trigger))
                }
            case .ended, .cancelled:
                // A click's end is no video's stop: nothing queued for it.
                if videoPresses.withLock({ $0.remove(trigger.press) != nil }) { queueVideo(.stop(trigger)) }
            default:
                break
            }
        }
        if capturing && trigger.shouldPlaySound && configuration.sound != .off {
            enqueue(sounds, trigger, kind: "sound", press: trigger.press)
        }
        runHooks(for: trigger)
    }

    /// Runs a command from a trigger message (press 0, no button action (`remote`), with its trigger id
    /// and press time): a photo, or a recording started or stopped, as a button's binding
    /// would. Returns at once, like ``handle(_:)``. Hooks see the files it writes (`photo`,
    /// `video`), not the command itself.
    public func perform(_ command: CaptureCommand, for trigger: ActionTrigger) {
        switch command {
        case .photo:
            queuePhoto(trigger)
        case .videoStart:
            if !reserve(pendingVideoStarts, limit: configuration.queueLimit) {
                onOutcome(.failed(.queueFull(kind: "video", press: trigger.press), press: trigger.press))
            } else {
                queueVideo(.start(trigger))
            }
        case .videoStop:
            if !reserve(pendingRemoteStops, limit: max(1, configuration.queueLimit)) {
                onOutcome(.failed(.queueFull(kind: "video", press: trigger.press), press: trigger.press))
            } else {
                queueVideo(.stop(trigger))
            }
        }
    }

    /// Stops a recording in progress (its file is finished), lets queued work finish and ends
    /// the workers. Call once, when the daemon stops.
    public func shutdown() async {
        videos.yield(.stopAll)
        photos.finish()
        videos.finish()
        sounds.finish()
        // Hooks for files written during the drain are still accepted until the photo and
        // video workers are done.
        let tasks = workers.withLock { $0 }
        for t in tasks.prefix(2) { await t.value }
        hooks.finish()
        for t in tasks.dropFirst(2) { await t.value }
        // A clock another runner took over runs on with it.
        if let booth, booth.isOwned(by: self) { booth.stop() }
        for e in executors { e.stop() }
        frames?.stopAndWait()
    }

    /// Stops the booth clock the runner holds (docs/booth.md): no countdown second or
    /// timelapse shot is due after it. ``shutdown()`` stops it too; the daemon stops it
    /// first, before the workers drain.
    public func stopBoothClock() {
        booth?.stop()
    }

    /// Whether a binding has a countdown or a timelapse, and so the runner a booth clock
    /// (its thread, `evc-booth`).
    public var hasBoothClock: Bool { booth != nil }

    /// Takes one of `limit` places counted by `counter`; false (and nothing taken) when all are taken.
    private func reserve(_ counter: borrowing Atomic<Int>, limit: Int) -> Bool {
        if counter.add(1, ordering: .relaxed).newValue <= limit { return true }
        counter.subtract(1, ordering: .relaxed)
        return false
    }

    private func queueVideo(_ command: VideoCommand) {
        videoCommandsQueued.add(1, ordering: .relaxed)
        if case .dropped = videos.yield(command) {
            videoCommandsDropped.add(1, ordering: .relaxed)
            logger.error("video command dropped: queue full (a bug: it is bounded by the starts accepted)")
        }
    }

    /// Whether a press on `binding` has its photo prepared at `began`: its click takes one,
    /// and the photo is the press's frame (not the release's).
    private func preparesPhotos(_ binding: ActionBinding) -> Bool {
        guard binding.photoOn == .click, binding.booth.isPlain, let settings = configuration.capture, photoFrames != nil else {
            return false
        }
        return settings.photoMoment == .press
    }

    /// Queues a photo request (a click, a trigger message), or reports `queue-full` when
    /// `queueLimit` requests are waiting. `shotReported`: its `shot` was reported already.
    func queuePhoto(_ trigger: ActionTrigger, shotReported: Bool = false) {
        if !reserve(pendingPhotos, limit: max(1, configuration.queueLimit)) {
            logQueueFull(kind: "photo", press: trigger.press)
            onOutcome(.failed(.queueFull(kind: "photo", press: trigger.press), press: trigger.press))
            if preparations.discard(trigger.press) { queuePhotoCommand(.discard(press: trigger.press)) }
            return
        }
        queuePhotoCommand(.take(trigger, prepared: preparations.claim(trigger.press), shotReported: shotReported))
    }

    private func queuePhotoCommand(_ command: PhotoCommand) {
        if case .dropped = photos.yield(command) {
            logger.error("photo command dropped: queue full (a bug: it is bounded by the requests and presses accepted)")
        }
    }

    private func enqueue<T: Sendable>(_ queue: AsyncStream<T>.Continuation, _ item: T, kind: String, press: PressID) {
        if case .dropped = queue.yield(item) {
            logQueueFull(kind: kind, press: press)
            onOutcome(.failed(.queueFull(kind: kind, press: press), press: press))
        }
    }

    private func logQueueFull(kind: String, press: PressID) {
        guard let left = queueFullLog.withLock({ $0.admit(now: logClock()) }) else { return }
        logger.info(
            "action queue full, request dropped\(left > 0 ? " (and \(left) more since the last such line)" : "")",
            metadata: ["action.kind": "\(kind)", "press": "\(press)"])
    }

    func runHooks(for trigger: ActionTrigger) {
        for hook in configuration.hooks where hook.matches(trigger) {
            enqueue(hooks, (hook, trigger), kind: "hook", press: trigger.press)
        }
    }
}
