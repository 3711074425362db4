import Dispatch
import Vocabulary
import Synchronization
import V4L2

/// The newest frame of a camera's second, small stream for the live view, while the capture
/// stream runs with one (a libcamera camera's viewfinder stream, docs/libcamera.md#two-streams).
/// One slot, its storage reused: the capture stream's thread stores each frame, the live
/// view takes the newest; without a second stream the live view reads the ring instead.
public final class ViewfinderFrames: Sendable {
    private struct State {
        var format: StreamFormat?
        var bytes: [UInt8] = []
        var sequence: UInt32 = 0
        var time = Timestamp(microseconds: 0)
        var kind = FrameTimestampKind(isMonotonic: true, isStartOfExposure: false)
        var stored = false
        var waiters: [DispatchSemaphore] = []
    }
    private let state = Mutex(State())

    public init() {}

    /// The format of the running stream's second stream; nil when it has none (or is stopped).
    public var format: StreamFormat? { state.withLock { $0.format } }

    /// A stream starts with a second stream in `format`, or (nil) with none; a stream that
    /// stops passes nil. Readers waiting are woken.
    public func begin(_ format: StreamFormat?) {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            s.format = format
            s.stored = false
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for w in waiters { w.signal() }
    }

    /// Stores a frame of `count` bytes, written by `fill` into the slot, taken at `time`.
    public func store(
        count: Int, sequence: UInt32, time: Timestamp, kind: FrameTimestampKind, _ fill: (UnsafeMutableRawBufferPointer) -> Void
    ) {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            guard s.format != nil else { return [] }
            if s.bytes.count != count { s.bytes = [UInt8](repeating: 0, count: count) }
            s.bytes.withUnsafeMutableBytes { fill($0) }
            (s.sequence, s.time, s.kind, s.stored) = (sequence, time, kind, true)
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for w in waiters { w.signal() }
    }

    /// The newest frame taken after `time`, waiting at most `timeout`; nil when none came or
    /// there is no second stream (any more).
    public func frame(after time: Timestamp, timeout: Duration) -> RingFrame? {
        let deadline = DispatchTime.now() + .nanoseconds(Int(timeout / .nanoseconds(1)))
        while true {
            let semaphore = DispatchSemaphore(value: 0)
            let outcome = state.withLock { s -> RingFrame?? in
                guard let format = s.format else { return .some(nil) }
                if s.stored, s.time > time {
                    // The slot's storage is shared: the next store copies on write.
                    return RingFrame(
                        frame: VideoFrame(bytes: s.bytes, format: format, sequence: s.sequence, timestampMicroseconds: s.time.microseconds),
                        timestampKind: s.kind)
                }
                s.waiters.append(semaphore)
                return nil
            }
            if let outcome { return outcome }
            if semaphore.wait(timeout: deadline) == .timedOut {
                state.withLock { s in s.waiters.removeAll { $0 === semaphore } }
                return nil
            }
        }
    }
}
