#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import Vocabulary
import Synchronization
import V4L2
import LinuxIO

/// The capture stream and its ring of recent frames (docs/behaviour.md#the-moment-of-the-press).
///
/// One thread dequeues each buffer, copies it into a preallocated slot of the ring and gives
/// it back to the driver: the copy reuses the slot's storage, so the steady state allocates
/// nothing. Photos take the frame nearest a time (the press), videos read the ring from a
/// time onwards (pre-roll) and then follow it. A camera that cannot stream fails the
/// requests waiting for it with its error; the rest of the daemon goes on.
public final class FrameSource: Sendable {
    public let settings: StreamSettings
    public let limits: RingLimits
    let logger: Logger
    /// Called once per failure of the stream (cannot open, unplugged, no frames).
    let onError: @Sendable (StreamingError) -> Void

    // Internal, not private: the stream's thread (FrameRing+Stream.swift) fills them.
    struct Slot {
        var bytes: [UInt8] = []
        var count = 0
        var sequence: UInt32 = 0
        var time = Timestamp(microseconds: 0)
        /// A stream can start at this frame: every frame of a picture format, an IDR frame of H.264.
        var keyframe = true
        /// Frames the camera dropped just before this one (its sequence jumped): H.264 after
        /// such a gap does not decode until the next keyframe.
        var lost = 0
    }

    struct State {
        var slots: [Slot] = []
        /// Where the next frame goes; `filled` slots before it hold frames, oldest first.
        var head = 0
        var filled = 0
        /// The slot `k` frames after the oldest held (`filled - 1`: the newest).
        func slot(fromOldest k: Int) -> Slot { slots[(head - filled + k + slots.count) % slots.count] }
        /// The newest frame's slot.
        var newest: Slot { slots[(head - 1 + slots.count) % slots.count] }
        /// Frames taken since the stream started (the ring's own counter, for readers).
        var total: UInt64 = 0
        /// The running stream's format (nil once it ended).
        var format: StreamFormat?
        /// The format of the frames the slots hold; kept after the stream ended, while a
        /// recording still takes the frames the ring holds.
        var heldFormat: StreamFormat?
        var timestampKind = FrameTimestampKind(isMonotonic: true, isStartOfExposure: false)
        var running = false
        var stopRequested = false
        /// The failure that ended the last stream, for requests waiting on it.
        var failure: StreamingError?
        /// Bumped at every start: readers notice a restart.
        var generation: UInt64 = 0
        var waiters: [DispatchSemaphore] = []
        /// The last request (on-press mode stops after `idleStop` without one).
        var lastUse = Timestamp(microseconds: 0)
        var readers = 0
        /// Signalled when the stream's thread has closed the camera.
        var stopped: [DispatchSemaphore] = []
        /// A start came while the thread was stopping.
        var restart = false
        /// Live view clients watching (``addViewer()``); each also counts as a reader.
        var viewers = 0
        /// Stop when the last viewer leaves: it was off when the first came, or a stop came
        /// while they watched (`stopAsked`).
        var stopAfterViewers = false, stopAsked = false
    }
    let state = Mutex(State())
    let mode: StreamMode
    let idleStop: Duration
    let opener: FrameStreamOpener
    let pictures: PictureDecoder?

    /// `opener`: the camera the frames come from (a V4L2 capture node unless told otherwise).
    /// `pictures`: makes photos' and the live view's frames from a camera's H.264 (without
    /// it, they get the access unit itself).
    public init(
        settings: StreamSettings, mode: StreamMode = .always, limits: RingLimits = RingLimits(),
        idleStop: Duration = .seconds(10), opener: FrameStreamOpener = .v4l2, pictures: PictureDecoder? = nil, logger: Logger,
        onError: @escaping @Sendable (StreamingError) -> Void = { _ in }
    ) {
        self.settings = settings
        self.opener = opener
        self.pictures = pictures
        self.mode = mode
        self.limits = limits
        self.idleStop = idleStop
        self.logger = logger
        self.onError = onError
    }

    /// Whether the stream is running now.
    public var isRunning: Bool { state.withLock { $0.running } }
    /// The negotiated format of the running stream.
    public var format: StreamFormat? { state.withLock { $0.format } }
    /// Slots in the ring (0 before the first frame).
    public var capacity: Int { state.withLock { $0.slots.count } }

    /// Starts the stream if it is not running (returns at once; frames follow).
    public func start() {
        // Asked for (the session): it stays on when the last live view client leaves.
        state.withLock { s in (s.stopAfterViewers, s.stopAsked) = (false, false) }
        resume()
    }

    /// Starts the stream if it is not running, for a reader or a viewer.
    private func resume() {
        let start = state.withLock { s -> UInt64? in
            s.lastUse = monotonicNow()
            guard !s.running else {
                // A stop is pending: cancel it; should the thread have seen it already, it
                // starts a new stream as it ends.
                if s.stopRequested { s.restart = true }
                s.stopRequested = false
                return nil
            }
            s.stopRequested = false
            s.running = true
            s.failure = nil
            s.generation &+= 1
            s.head = 0
            s.filled = 0
            return s.generation
        }
        guard let generation = start else { return }
        startThread(name: "evc-stream") { [self] in run(generation: generation) }
    }

    /// Stops the stream (returns at once; the thread lets the camera go within 250 ms). A
    /// reader already taking frames gets those the ring still holds; a ``start()`` before
    /// the camera is let go keeps it running.
    public func stop() {
        state.withLock { s in
            // Someone watches the live view: the stream stops when the last viewer leaves.
            if s.viewers > 0 {
                s.stopAfterViewers = true
                s.stopAsked = true
                return
            }
            s.stopRequested = true
            s.restart = false
        }
    }

    /// A live view client starts watching: the stream runs (whatever the mode and the
    /// session) until the last one leaves, and then goes back to what it would have done.
    public func addViewer() {
        let wasOff = state.withLock { s -> Bool in
            s.viewers += 1
            s.readers += 1
            let off = !s.running || s.stopRequested
            if off { s.stopAfterViewers = true }
            return off
        }
        if wasOff { resume() }
    }

    /// A live view client stops watching (once per ``addViewer()``).
    public func removeViewer() {
        state.withLock { s in
            s.viewers -= 1
            s.readers -= 1
            s.lastUse = monotonicNow()
            if s.viewers == 0 && s.stopAfterViewers {
                // `on-press` streams stop once idle, an `always` one when told.
                if mode == .always || s.stopAsked {
                    s.stopRequested = true
                    s.restart = false
                }
                (s.stopAfterViewers, s.stopAsked) = (false, false)
            }
        }
    }

    /// Stops the stream and waits (at most `timeout`) until the camera is closed, so another
    /// program, or another stream, can open it.
    public func stopAndWait(timeout: Duration = .seconds(3)) {
        let done = DispatchSemaphore(value: 0)
        let running = state.withLock { s -> Bool in
            s.stopRequested = true
            s.restart = false
            if s.running { s.stopped.append(done) }
            return s.running
        }
        if running { _ = done.wait(timeout: .now() + .milliseconds(Int(timeout / .milliseconds(1)))) }
    }

    /// The frame nearest `time`, waiting at most `timeout` for a frame taken
    /// at or after it: zero shutter lag while the stream runs; when it was not running, the
    /// first frame the camera delivers. From a camera's H.264, with a ``PictureDecoder``, the
    /// picture of that frame, decoded from the keyframe before it (docs/video.md#the-cameras-own-h264).
    public func frame(nearest time: Timestamp, timeout: Duration) throws(StreamingError) -> RingFrame {
        let wasRunning = isRunning
        // A reader before the start: the idle stop waits for it.
        state.withLock { $0.readers += 1 }
        defer { state.withLock { $0.readers -= 1 } }
        resume()
        let deadline = ContinuousClock.now + timeout
        var target = time
        if !wasRunning {
            // A cold stream has nothing from the press: the first frame it delivers.
            let seen = state.withLock { $0.total }
            try waitFor(deadline: deadline, timeout: timeout) { s in s.total >= seen + 1 }
            target = state.withLock { s in s.newest.time }
        }
        try waitFor(deadline: deadline, timeout: timeout) { s in
            s.filled > 0 && s.newest.time >= target
        }
        while true {
            let (nearest, run, total) = state.withLock { s -> (TakenFrame, [TakenFrame]?, UInt64) in
                var best = (s.head - s.filled + s.slots.count) % s.slots.count
                for k in 0..<s.filled {
                    let i = (s.head - s.filled + k + s.slots.count) % s.slots.count
                    if Self.distance(s.slots[i].time, target) < Self.distance(s.slots[best].time, target) { best = i }
                }
                guard s.format?.pixelFormat == .h264, pictures != nil else { return (taken(s, best), nil, s.total) }
                // The camera's H.264: the run from the keyframe at or before that frame, else
                // from the first keyframe after it (a picture a little later than asked).
                let order = (0..<s.filled).map { (s.head - s.filled + $0 + s.slots.count) % s.slots.count }
                let k = order.firstIndex(of: best)!
                let keys = order.indices.filter { s.slots[order[$0]].keyframe }
                if let start = keys.last(where: { $0 <= k }) { return (taken(s, best), order[start...k].map { taken(s, $0) }, s.total) }
                if let after = keys.first(where: { $0 > k }) { return (taken(s, order[after]), [taken(s, order[after])], s.total) }
                return (taken(s, best), [], s.total)
            }
            guard let run, let pictures else { return nearest.frame() }
            guard !run.isEmpty else {
                // No keyframe in the ring yet (a stream that just started): wait for one.
                try waitFor(deadline: deadline, timeout: timeout) { s in s.total > total }
                continue
            }
            if run.dropFirst().contains(where: { $0.lost > 0 }) {
                throw StreamingError(
                    code: .failed,
                    context:
                        "the camera dropped a frame between the keyframe and the frame at \(nearest.time): its picture cannot be decoded")
            }
            let picture = try pictures.picture(run.map { $0.frame().frame })
            return RingFrame(frame: picture, timestampKind: nearest.timestampKind)
        }
    }

    /// The newest frame, once the camera has taken one after `time`: what a live view shows
    /// next (docs/live-view.md). Not ``frame(nearest:timeout:)`` with the clock's time: once
    /// the newest frame is older than the moment asked, that waits for the camera's next
    /// frame and may still hand out the older one, a frame interval late (200 ms at 5 fps).
    /// From a camera's H.264, with a ``PictureDecoder``, the newest frame's picture.
    public func newest(after time: Timestamp, timeout: Duration) throws(StreamingError) -> RingFrame {
        state.withLock { $0.readers += 1 }
        defer { state.withLock { $0.readers -= 1 } }
        resume()
        let deadline = ContinuousClock.now + timeout
        try waitFor(deadline: deadline, timeout: timeout) { s in
            s.filled > 0 && s.newest.time > time
        }
        let newest = state.withLock { s in s.newest.time }
        // The nearest frame to the newest's own time is that frame (or, should the camera have
        // taken another meanwhile, that one's neighbour); it also decodes H.264.
        return try frame(nearest: newest, timeout: max(deadline - ContinuousClock.now, .milliseconds(1)))
    }

    /// Frames from the one nearest `time` (the oldest kept when the ring does
    /// not reach back that far) in order, then each new one, to `each` until it returns false. Frames the
    /// reader fell behind on (the ring overwrote them) are skipped and counted.
    ///
    /// H.264 frames can only be read from a keyframe (IDR) on: from the last one at or
    /// before `time` the ring holds, else the first after it (``startFrame(times:keyframes:at:)``);
    /// after frames were skipped, or dropped by the camera (its sequence jumped), from the
    /// next keyframe on (the frames before it, and the dropped ones, are counted as skipped too).
    public func frames(from time: Timestamp, timeout: Duration, _ each: (RingFrame) throws -> Bool) throws -> (delivered: Int, skipped: Int)
    {
        state.withLock { $0.readers += 1 }
        defer { state.withLock { $0.readers -= 1 } }
        resume()
        var next: UInt64?  // the ring counter of the next frame to deliver
        var delivered = 0, skipped = 0
        var needsKeyframe = false
        while true {
            let deadline = ContinuousClock.now + timeout
            if next == nil {
                // The frame nearest `time`, as a photo of that moment takes: once one at or
                // after it is there, unless the stream is cold (its first frames come late).
                try waitFor(deadline: deadline, timeout: timeout) { s in s.filled > 0 }
                try? waitFor(deadline: min(deadline, ContinuousClock.now + .seconds(1)), timeout: timeout) { s in
                    s.newest.time >= time
                }
                while next == nil {
                    let (start, total) = state.withLock { s -> (UInt64?, UInt64) in
                        let slots = (0..<s.filled).map { s.slot(fromOldest: $0) }
                        let k = Self.startFrame(times: slots.map(\.time), keyframes: slots.map(\.keyframe), at: time)
                        return (k.map { s.total - UInt64(s.filled - $0) }, s.total)
                    }
                    next = start
                    // No keyframe in the ring yet (H.264): the next one the camera sends.
                    if start == nil { try waitFor(deadline: ContinuousClock.now + timeout, timeout: timeout) { s in s.total > total } }
                }
            }
            let wanted = next!
            // Once the stream ended, the frames it left are still delivered, then its failure.
            try waitFor(deadline: deadline, timeout: timeout, heldFrames: true) { s in s.total > wanted }
            let (taken, oldest) = state.withLock { s -> (TakenFrame?, UInt64) in
                let oldest = s.total - UInt64(s.filled)
                guard wanted >= oldest else { return (nil, oldest) }
                let i = (s.head - Int(s.total - wanted) + s.slots.count) % s.slots.count
                return (self.taken(s, i), oldest)
            }
            guard let taken else {
                skipped += Int(oldest - wanted)
                next = oldest
                needsKeyframe = true
                continue
            }
            next = wanted + 1
            // Frames the camera dropped are counted as skipped too.
            if delivered > 0, taken.lost > 0 {
                skipped += taken.lost
                needsKeyframe = true
            }
            // After a gap, H.264 goes on from its next keyframe: the frames between refer to lost ones.
            if needsKeyframe && !taken.keyframe {
                skipped += 1
                continue
            }
            needsKeyframe = false
            let frame = taken.frame()
            delivered += 1
            state.withLock { $0.lastUse = monotonicNow() }
            if try !each(frame) { return (delivered, skipped) }
        }
    }

    /// Where a reader of frames from `time` starts among the ring's frames (`times`, oldest
    /// first; `keyframes`: which of them a stream can start at): the frame nearest `time`
    /// when every frame can start one; otherwise the last keyframe at or before `time`, or
    /// the first after it when the ring holds none before; nil when it holds no keyframe.
    static func startFrame(times: [Timestamp], keyframes: [Bool], at time: Timestamp) -> Int? {
        precondition(times.count == keyframes.count)
        guard keyframes.contains(false) else {
            var best: Int?
            for k in times.indices where best == nil || distance(times[k], time) < distance(times[best!], time) { best = k }
            return best
        }
        let candidates = times.indices.filter { keyframes[$0] }
        return candidates.last { times[$0] <= time } ?? candidates.first
    }

    /// How far apart two frame times are, in µs (which frame is nearest a moment).
    private static func distance(_ a: Timestamp, _ b: Timestamp) -> Int64 { abs(a.microseconds - b.microseconds) }

    // MARK: - Helpers

    /// A rate as written: 25, 7.5, 29.97.
    static func rate(_ fps: Double) -> String {
        fps == fps.rounded() ? "\(Int(fps))" : "\((fps * 1000).rounded() / 1000)"
    }

    /// The frame in slot `i`, taken under the lock without copying its bytes: the slot's
    /// storage is shared (one retain), so the lock is held for a few field reads whoever the
    /// reader is — a recording under `SCHED_IDLE` that lost the CPU inside it would otherwise
    /// hold up the stream's thread for a whole frame copy. Should the stream come round to
    /// this slot while a reader still holds it, copy-on-write gives the slot new storage and
    /// the reader keeps its frame.
    private func taken(_ s: State, _ i: Int) -> TakenFrame {
        let slot = s.slots[i]
        return TakenFrame(
            storage: slot.bytes, count: slot.count, format: s.heldFormat!, sequence: slot.sequence, time: slot.time,
            timestampKind: s.timestampKind, keyframe: slot.keyframe, lost: slot.lost)
    }

    /// A frame as ``taken(_:_:)`` hands it out: the slot's storage and how much of it is the
    /// frame (a slot keeps room for larger MJPEG frames).
    private struct TakenFrame {
        var storage: [UInt8]
        var count: Int
        var format: StreamFormat
        var sequence: UInt32
        var time: Timestamp
        var timestampKind: FrameTimestampKind
        var keyframe: Bool
        var lost: Int

        /// The frame, outside the lock: its bytes are the slot's storage when they fill it
        /// (raw frames), else a copy of the frame's part.
        consuming func frame() -> RingFrame {
            let bytes = count == storage.count ? storage : Array(storage[0..<count])
            return RingFrame(
                frame: VideoFrame(bytes: bytes, format: format, sequence: sequence, timestampMicroseconds: time.microseconds),
                timestampKind: timestampKind)
        }
    }

    /// Waits until `ready` holds, the stream fails, or `deadline` passes.
    /// Waits until `ready`, while the stream runs; with `heldFrames`, also when it has ended
    /// but `ready` holds for the frames it left.
    private func waitFor(
        deadline: ContinuousClock.Instant, timeout: Duration, heldFrames: Bool = false, _ ready: (State) -> Bool
    ) throws(StreamingError) {
        while true {
            let semaphore = DispatchSemaphore(value: 0)
            let outcome = state.withLock { s -> Result<Bool, StreamingError> in
                if s.running || heldFrames, !s.slots.isEmpty, ready(s) { return .success(true) }
                if !s.running, let f = s.failure { return .failure(f) }
                s.waiters.append(semaphore)
                return .success(false)
            }
            switch outcome {
            case .success(true): return
            case .failure(let e): throw e
            case .success(false): break
            }
            let left = deadline - ContinuousClock.now
            if left <= .zero || semaphore.wait(timeout: .now() + .nanoseconds(Int(left / .nanoseconds(1)))) == .timedOut {
                state.withLock { s in s.waiters.removeAll { $0 === semaphore } }
                throw StreamingError(code: .timedOut, context: "waiting for a frame from \(settings.devicePath) (\(timeout))")
            }
        }
    }
}

/// Makes the picture of a camera's H.264 frame from the run of access units that ends with it
/// (an IDR frame first): what ``FrameSource/frame(nearest:timeout:)`` gives photos and the live
/// view when the ring holds H.264. Movie's `H264Picture` decodes with libavcodec.
public struct PictureDecoder: Sendable {
    public var picture: @Sendable ([VideoFrame]) throws(StreamingError) -> VideoFrame

    public init(picture: @escaping @Sendable ([VideoFrame]) throws(StreamingError) -> VideoFrame) {
        self.picture = picture
    }
}
