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

/// The runner's workers (docs/architecture.md): photos and videos, each on a thread of its own,
/// taking the commands the input side queued, in order.
extension ActionRunner {
    func runPhotos(_ commands: AsyncStream<PhotoCommand>) async {
        let prepared = configuration.capture.flatMap { settings in
            photoFrames.map { PreparedPhotos(frames: $0, settings: settings, ledger: preparations) }
        }
        for await command in commands {
            switch command {
            case .prepare(let press, let moment):
                prepared?.prepare(press: press, moment: moment, zoom: digitalZoom.withLock { $0 })
            case .take(let trigger, let wasPrepared, let shotReported):
                pendingPhotos.subtract(1, ordering: .relaxed)
                await takePhoto(trigger, prepared: wasPrepared ? prepared : nil, shotReported: shotReported)
            case .discard(let press):
                prepared?.discard(press: press)
            }
        }
        prepared?.discardAll()
    }

    /// What a photo or a video of `trigger` is made as: named at its press, not at the worker's
    /// turn (docs/configuration.md#output), with the digital zoom of now.
    func captureRequest(for trigger: ActionTrigger) -> CaptureRequest {
        CaptureRequest(
            press: trigger.press, action: trigger.action, time: trigger.pressMoment.wallSeconds, trigger: trigger.triggerID,
            zoom: digitalZoom.withLock { $0 })
    }

    func takePhoto(_ trigger: ActionTrigger, prepared: PreparedPhotos?, shotReported: Bool) async {
        guard let settings = configuration.capture, let frames = photoFrames else {
            onOutcome(.failed(.noCamera, press: trigger.press))
            return
        }
        let request = captureRequest(for: trigger)
        // The press (zero shutter lag) or the release; a rig's press at the rig's moment
        // (the same instant on every station with synchronised clocks); else the trigger's
        // own time (a release, a trigger message's arrival).
        let moment =
            (settings.photoMoment == .press ? trigger.pressTime : nil) ?? trigger.rigMoment ?? trigger.time
        if !shotReported { onOutcome(.shot(time: moment, press: trigger.press)) }
        if let booth = trigger.action.flatMap({ configuration.bindings[$0] })?.booth, booth.burst > 1 {
            return takeBurst(trigger, booth, moment: moment, request: request, prepared: prepared)
        }
        // Blocking camera and file work runs right here: this worker has a thread of its
        // own (see init), so it never occupies the cooperative pool. A photo prepared since
        // the press is only committed; otherwise it is taken now.
        let result =
            prepared?.commit(press: trigger.press, moment: moment, request: request)
            ?? Result { () throws(RecordingError) -> PhotoResult in
                let ring: RingFrame
                do throws(SystemError) { ring = try frames.frame(nearest: moment, timeout: settings.frameTimeout) } catch {
                    throw .camera(error)
                }
                if let booth, !booth.accepts(press: trigger.press, frameTime: ring.time, moment: moment) {
                    throw .camera(
                        SystemError(code: .timedOut, context: "no frame near the timelapse shot's moment (the camera was away)"))
                }
                return try Photo.save(ring, settings, request)
            }
        switch result {
        case .success(var photo):
            photo.pressOffset = trigger.rigMoment == nil ? nil : photo.frameTime.map { $0.microseconds - moment.microseconds }
            logger.info("photo saved", metadata: ["file.path": "\(photo.path)", "press": "\(trigger.press)"])
            onOutcome(.photoSaved(photo, press: trigger.press))
            fileWritten(.photo, photo.path, frameTime: photo.frameTime, for: trigger)
        case .failure(let error):
            logger.info("photo failed", metadata: ["error": "\(error)", "press": "\(trigger.press)"])
            onOutcome(.failed(.recording(error), press: trigger.press))
        }
    }

    /// Hooks that want the file (`on = ["photo"]` / `["video"]`) run once it is written.
    func fileWritten(_ kind: ActionTrigger.Kind, _ path: String, frameTime: Timestamp?, for trigger: ActionTrigger) {
        var done = trigger
        done.kind = kind
        done.file = path
        done.frameTime = frameTime
        done.time = monotonicNow()
        runHooks(for: done)
    }

    func runVideo(_ commands: AsyncStream<VideoCommand>) async {
        var active: (trigger: ActionTrigger, recording: VideoRecording)?
        func finish(at release: Timestamp? = nil) async {
            guard let (trigger, recording) = active else { return }
            active = nil
            let result = await recording.stop(at: release)
            switch result {
            case .success(let video):
                logger.info("video saved", metadata: ["file.path": "\(video.path)", "video.frames": "\(video.frames)"])
                onOutcome(.videoSaved(video, press: trigger.press))
                fileWritten(.video, video.path, frameTime: video.frameTime, for: trigger)
            case .failure(let error):
                onOutcome(.failed(.recording(error), press: trigger.press))
            }
        }
        for await command in commands {
            switch command {
            case .start(let trigger):
                pendingVideoStarts.subtract(1, ordering: .relaxed)
                guard let settings = configuration.capture, let frames else {
                    onOutcome(.failed(.noCamera, press: trigger.press))
                    continue
                }
                if let current = active {
                    let what = current.trigger.triggerID.map { "trigger \($0)" } ?? "press \(current.trigger.press)"
                    let e = ActionError.recording(.camera(.init(code: .busy, context: "already recording \(what)")))
                    onOutcome(.failed(e, press: trigger.press))
                    continue
                }
                // Recorded from the press (not the hold threshold), minus the pre-roll.
                let request = captureRequest(for: trigger)
                let from = trigger.pressMoment - settings.preRoll
                do {
                    let recording = try await VideoRecording.start(from: frames, time: from, settings, request, logger: logger)
                    active = (trigger, recording)
                    onOutcome(.videoStarted(press: trigger.press, trigger: trigger.triggerID))
                } catch {
                    onOutcome(.failed(.recording(error), press: trigger.press))
                }
            case .stop(let trigger):
                if trigger.press == .remote { pendingRemoteStops.subtract(1, ordering: .relaxed) }
                if let current = active, Self.stop(trigger, ends: current.trigger) { await finish(at: trigger.time) }
            case .stopAll:
                await finish()
            }
        }
        await finish()
    }
}
