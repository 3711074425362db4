#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import Vocabulary
import Synchronization
import V4L2
import LinuxIO

/// The capture stream's thread: opens the camera, copies each frame into the ring's next
/// slot and wakes the readers (FrameRing.swift), until stopped, idle or failed.
extension FrameSource {
    func run(generation: UInt64) {
        // The stream lives (and the camera stays open) only inside `streamFrames`.
        let failure = streamFrames()
        do {
            let again = state.withLock { s -> UInt64? in
                guard s.restart, !s.stopRequested, failure == nil else { return nil }
                s.restart = false
                s.generation &+= 1
                s.head = 0
                s.filled = 0
                return s.generation
            }
            if let again {
                startThread(name: "evc-stream") { [self] in run(generation: again) }
                return
            }
            let waiters = state.withLock { s -> [DispatchSemaphore] in
                s.running = false
                s.failure = failure ?? StreamingError(code: .failed, context: "capture stream of \(settings.devicePath) stopped")
                // The frames stay for readers already reading (a recording whose release
                // came before the stream ended records up to it); the next start empties them.
                s.format = nil
                defer { s.waiters.removeAll(); s.stopped.removeAll() }
                return s.waiters + s.stopped
            }
            for w in waiters { w.signal() }
            if let failure { onError(failure) }
        }
    }

    /// Streams into the ring until stopped, idle or failed; the camera is closed on return.
    private func streamFrames() -> StreamingError? {
        var failure: StreamingError?
        let stream: any FrameStream
        do {
            stream = try opener.open(settings)
        } catch {
            return error
        }
        let format = stream.format
        if let wanted = settings.framesPerSecond, format.framesPerSecond.map({ abs($0 - wanted) > wanted / 200 }) ?? true {
            // Streaming on at the driver's rate; said once per start.
            let got = format.framesPerSecond.map { "gives \(Self.rate($0)) fps at this size" } ?? "does not say its rate"
            onError(
                StreamingError(
                    code: .frameRateNotAvailable,
                    context:
                        "capture stream of \(settings.devicePath) at \(format.width)×\(format.height): asked for \(Self.rate(wanted)) fps, the driver \(got)"
                ))
        }
        let slots = limits.slots(frameBytes: max(format.bytesPerLine * format.height, 1), fps: format.framesPerSecond)
        state.withLock { s in
            s.format = format
            s.heldFormat = format
            s.slots = Array(repeating: Slot(), count: slots)
        }
        logger.info(
            "capture stream started",
            metadata: ["v4l2.device": "\(settings.devicePath)", "ring.slots": "\(slots)", "v4l2.format": "\(format.pixelFormat)"])
        var lastFrame = ContinuousClock.now
        var lastSequence: UInt32?
        while true {
            let stop = state.withLock { s in
                // Idle: in `onPress` mode nobody pressed for `idleStop` and no reader is left.
                let idle =
                    s.readers == 0
                    && mode == .onPress && monotonicNow() - s.lastUse > idleStop
                // Stopping for idleness is a stop request, so a start() from now on (a press
                // while the camera closes) restarts the stream instead of failing its reader
                // with "stopped".
                if idle { s.stopRequested = true }
                return s.stopRequested
            }
            if stop { break }
            do {
                // Looked at once, outside the ring's lock: the scan stops at the access unit's first slice.
                try stream.withNextFrame(timeout: .milliseconds(250)) { b in
                    let h264 = format.pixelFormat == .h264
                    // A forward jump of the driver's counter: frames the camera dropped.
                    let jump = lastSequence.map { b.sequence &- $0 } ?? 1
                    store(b, keyframe: !h264 || AnnexB.containsIDR(b.bytes), lost: h264 && jump > 1 && jump < 1 << 31 ? Int(jump - 1) : 0)
                    lastSequence = b.sequence
                }
                lastFrame = ContinuousClock.now
            } catch  where error.code == .timedOut {
                // Wakes to look at stop and idle; a camera silent for the frame timeout failed.
                if ContinuousClock.now - lastFrame > settings.frameTimeout {
                    failure = StreamingError(code: .timedOut, context: "no frame from \(settings.devicePath) for \(settings.frameTimeout)")
                    break
                }
            } catch {
                failure = error
                break
            }
        }
        // Closed before it is said: whoever reads the line may open the camera at once.
        stream.close()
        logger.info("capture stream stopped", metadata: ["v4l2.device": "\(settings.devicePath)"])
        return failure
    }

    /// Copies a frame from the driver's buffer into the next slot (its storage reused) and
    /// wakes the readers. `keyframe`: a stream can start at it (every picture; an IDR frame).
    private func store(_ b: BorrowedFrame, keyframe: Bool, lost: Int) {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            let i = s.head
            if s.slots[i].bytes.count < b.bytes.count {
                // Grows once per slot to the largest frame seen: with room for MJPEG and H.264, whose
                // sizes vary; raw frames are all one size (room would be a quarter more
                // resident memory per slot: the zero fill touches it).
                let compressed = s.format.map { $0.pixelFormat.isJPEG || $0.pixelFormat == .h264 } ?? false
                let room = compressed ? b.bytes.count / 4 : 0
                s.slots[i].bytes = [UInt8](repeating: 0, count: b.bytes.count + room)
            }
            s.slots[i].bytes.withUnsafeMutableBytes { dst in
                dst.baseAddress!.copyMemory(from: b.bytes.baseAddress!, byteCount: b.bytes.count)
            }
            s.slots[i].count = b.bytes.count
            s.slots[i].sequence = b.sequence
            s.slots[i].time = Timestamp(microseconds: b.timestampMicroseconds)
            s.slots[i].keyframe = keyframe
            s.slots[i].lost = lost
            s.timestampKind = b.timestampKind
            s.head = (i + 1) % s.slots.count
            s.filled = min(s.filled + 1, s.slots.count)
            s.total &+= 1
            guard !s.waiters.isEmpty else { return [] }
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for w in waiters { w.signal() }
    }
}
