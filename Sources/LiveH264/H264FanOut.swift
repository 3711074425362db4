import Dispatch
import Movie
import Synchronization

/// One H.264 stream handed to many consumers (docs/live-view.md#h264): RTSP clients and
/// other live viewers share one encode. Each consumer has a bounded queue of its own; a
/// consumer that falls behind loses frames, never the others and never the producer.
///
/// - The first consumer to join starts the producer (``Hooks/start``); the last to leave
///   stops it (``Hooks/stop``).
/// - A consumer starts at a keyframe: with ``JoinPolicy/askForKeyframe`` it waits for the
///   next one, which the producer is asked for at once (an encoder makes the next frame an
///   IDR frame); with ``JoinPolicy/replayLastRun`` (a camera's own H.264, which cannot be
///   asked) it gets the run of frames since the last keyframe at once, then the live ones.
/// - A consumer whose queue is full has it emptied and waits for the next keyframe (frames
///   after a gap do not decode), which the producer is asked for; its ``H264Consumer/dropped``
///   counts what it lost.
///
/// ``publish(_:)`` is called by the producer's thread and never blocks.
public final class H264FanOut: Sendable {
    public enum JoinPolicy: Sendable {
        case askForKeyframe
        case replayLastRun
    }

    /// What the producer is told. Called outside the fan-out's lock, on the joining or
    /// leaving consumer's thread (``Hooks/start``, ``Hooks/stop``) or the producer's
    /// (``Hooks/keyframe`` after a drop).
    public struct Hooks: Sendable {
        public var start: @Sendable () -> Void
        public var stop: @Sendable () -> Void
        public var keyframe: @Sendable () -> Void
        public init(
            start: @escaping @Sendable () -> Void, stop: @escaping @Sendable () -> Void, keyframe: @escaping @Sendable () -> Void
        ) {
            self.start = start
            self.stop = stop
            self.keyframe = keyframe
        }
    }

    struct Queue {
        var frames: [EncodedFrame] = []
        /// Frames are skipped until a keyframe (a new consumer, or one after a drop).
        var waitingForKeyframe = true
        var dropped = 0
        let wake: DispatchSemaphore
    }

    struct State {
        var policy: JoinPolicy
        var queues: [UInt64: Queue] = [:]
        var nextID: UInt64 = 0
        /// The frames from the last keyframe on (``JoinPolicy/replayLastRun``), at most
        /// `queueLimit` of them (empty when the run is longer).
        var lastRun: [EncodedFrame] = []
        var runTooLong = false
    }

    /// Frames a consumer may have waiting.
    public let queueLimit: Int
    let hooks: Hooks
    let state: Mutex<State>

    public init(queueLimit: Int = 30, policy: JoinPolicy, hooks: Hooks) {
        precondition(queueLimit > 0)
        self.queueLimit = queueLimit
        self.hooks = hooks
        state = Mutex(State(policy: policy))
    }

    /// How consumers that join from now on start (the producer knows once it sees its source).
    public var policy: JoinPolicy {
        get { state.withLock { $0.policy } }
        set { state.withLock { $0.policy = newValue } }
    }

    /// Consumers now.
    public var consumers: Int { state.withLock { $0.queues.count } }

    /// A new consumer; the first starts the producer.
    public func join() -> H264Consumer {
        let (id, first, askKeyframe) = state.withLock { s -> (UInt64, Bool, Bool) in
            let id = s.nextID
            s.nextID += 1
            var q = Queue(wake: DispatchSemaphore(value: 0))
            var ask = s.policy == .askForKeyframe
            if s.policy == .replayLastRun {
                if !s.lastRun.isEmpty {
                    q.frames = s.lastRun
                    q.waitingForKeyframe = false
                    q.wake.signal()
                } else {
                    ask = true
                }
            }
            let first = s.queues.isEmpty
            s.queues[id] = q
            return (id, first, ask)
        }
        if first { hooks.start() }
        if askKeyframe && !first { hooks.keyframe() }
        return H264Consumer(id: id, fanOut: self)
    }

    func leave(_ id: UInt64) {
        let last = state.withLock { s -> Bool in
            guard let q = s.queues.removeValue(forKey: id) else { return false }
            q.wake.signal()
            if s.queues.isEmpty {
                s.lastRun = []
                s.runTooLong = false
                return true
            }
            return false
        }
        if last { hooks.stop() }
    }

    /// A frame from the producer, to every consumer's queue.
    public func publish(_ frame: EncodedFrame) {
        let askKeyframe = state.withLock { s -> Bool in
            if s.policy == .replayLastRun {
                if frame.isKeyframe {
                    s.lastRun = [frame]
                    s.runTooLong = false
                } else if !s.runTooLong && !s.lastRun.isEmpty {
                    if s.lastRun.count < queueLimit {
                        s.lastRun.append(frame)
                    } else {
                        s.lastRun = []
                        s.runTooLong = true
                    }
                }
            }
            var ask = false
            for id in s.queues.keys {
                s.queues[id]!.take(frame, limit: queueLimit, ask: &ask)
            }
            return ask
        }
        if askKeyframe { hooks.keyframe() }
    }

    func next(_ id: UInt64, timeout: Duration) -> EncodedFrame? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (frame, wake) = state.withLock { s -> (EncodedFrame?, DispatchSemaphore?) in
                guard var q = s.queues[id] else { return (nil, nil) }
                defer { s.queues[id] = q }
                if !q.frames.isEmpty { return (q.frames.removeFirst(), nil) }
                return (nil, q.wake)
            }
            if let frame { return frame }
            guard let wake else { return nil }
            let left = deadline - ContinuousClock.now
            if left <= .zero || wake.wait(timeout: .now() + .nanoseconds(Int(left / .nanoseconds(1)))) == .timedOut { return nil }
        }
    }

    func dropped(_ id: UInt64) -> Int { state.withLock { $0.queues[id]?.dropped ?? 0 } }
}

extension H264FanOut.Queue {
    /// Queues `frame` unless this consumer waits for a keyframe; a full queue is emptied
    /// (and counted), and the consumer waits for the next keyframe, which `ask` requests.
    mutating func take(_ frame: EncodedFrame, limit: Int, ask: inout Bool) {
        if waitingForKeyframe {
            guard frame.isKeyframe else { return }
            waitingForKeyframe = false
        } else if frames.count >= limit {
            dropped += frames.count + 1
            frames.removeAll()
            if !frame.isKeyframe {
                waitingForKeyframe = true
                ask = true
                return
            }
        }
        frames.append(frame)
        wake.signal()
    }
}

/// One consumer of an ``H264FanOut``: frames in order from a keyframe on, until it leaves.
/// One thread reads it.
public final class H264Consumer: Sendable {
    let id: UInt64
    let fanOut: H264FanOut

    init(id: UInt64, fanOut: H264FanOut) {
        self.id = id
        self.fanOut = fanOut
    }

    /// The next frame, waiting at most `timeout`; nil on timeout or once it left.
    public func next(timeout: Duration) -> EncodedFrame? { fanOut.next(id, timeout: timeout) }

    /// Frames this consumer lost because it did not take them in time.
    public var dropped: Int { fanOut.dropped(id) }

    /// Leaves; the last consumer to leave stops the producer. Twice is once.
    public func leave() { fanOut.leave(id) }

    /// This consumer's place taken by a new one, which starts at a keyframe: the new one
    /// joins before this one leaves, so a last consumer starting again never stops the
    /// encoder in between.
    public func rejoin() -> H264Consumer {
        let next = fanOut.join()
        leave()
        return next
    }

    deinit { fanOut.leave(id) }
}
