import Dispatch
import Foundation
import LiveH264
import Movie
import Synchronization
import Testing

/// The shared H.264 stream's fan-out (docs/live-view.md#h264): consumers start at a
/// keyframe, a slow one loses frames alone, the producer runs only while someone is joined.
@Suite struct H264FanOutTests {
    /// What the producer was told, in order.
    final class Producer: Sendable {
        let calls = Mutex<[String]>([])
        var hooks: H264FanOut.Hooks {
            .init(
                start: { self.calls.withLock { $0.append("start") } }, stop: { self.calls.withLock { $0.append("stop") } },
                keyframe: { self.calls.withLock { $0.append("keyframe") } })
        }
        var log: [String] { calls.withLock { $0 } }
    }

    static func frame(_ n: Int64, key: Bool = false) -> EncodedFrame {
        EncodedFrame(bytes: [0, 0, 0, 1, key ? 0x65 : 0x41, UInt8(n & 0xFF)], timestampMicroseconds: n * 33_333, isKeyframe: key)
    }

    /// Everything a consumer has waiting, by frame number.
    static func drain(_ c: H264Consumer) -> [Int64] {
        var out: [Int64] = []
        while let f = c.next(timeout: .zero) { out.append(f.timestampMicroseconds / 33_333) }
        return out
    }

    @Test func theFirstJoinStartsTheProducerAndTheLastLeaveStopsIt() {
        let producer = Producer()
        let fanOut = H264FanOut(queueLimit: 4, policy: .askForKeyframe, hooks: producer.hooks)
        #expect(producer.log == [])
        let a = fanOut.join()
        #expect(producer.log == ["start"])
        let b = fanOut.join()
        // The second asks for a keyframe (it cannot start mid-run), and does not start a second producer.
        #expect(producer.log == ["start", "keyframe"])
        #expect(fanOut.consumers == 2)
        a.leave()
        #expect(producer.log == ["start", "keyframe"])
        b.leave()
        #expect(producer.log == ["start", "keyframe", "stop"])
        b.leave()
        #expect(producer.log == ["start", "keyframe", "stop"], "leaving twice is leaving once")
        #expect(fanOut.consumers == 0)
        // Frames published with nobody joined go nowhere, and a later join starts it again.
        fanOut.publish(Self.frame(1, key: true))
        let c = fanOut.join()
        #expect(producer.log == ["start", "keyframe", "stop", "start"])
        #expect(Self.drain(c) == [])
        c.leave()
    }

    @Test func aConsumerGoingAwayWithoutLeavingLeavesToo() {
        let producer = Producer()
        let fanOut = H264FanOut(queueLimit: 4, policy: .askForKeyframe, hooks: producer.hooks)
        do { _ = fanOut.join() }
        #expect(producer.log == ["start", "stop"])
        #expect(fanOut.consumers == 0)
    }

    /// Asking the encoder: a joining consumer skips the frames before the next keyframe.
    @Test func aJoiningConsumerStartsAtTheNextKeyframe() {
        let producer = Producer()
        let fanOut = H264FanOut(queueLimit: 8, policy: .askForKeyframe, hooks: producer.hooks)
        let a = fanOut.join()
        fanOut.publish(Self.frame(1, key: true))
        fanOut.publish(Self.frame(2))
        let b = fanOut.join()
        #expect(producer.log == ["start", "keyframe"])
        fanOut.publish(Self.frame(3))
        fanOut.publish(Self.frame(4, key: true))  // the keyframe asked for
        fanOut.publish(Self.frame(5))
        #expect(Self.drain(a) == [1, 2, 3, 4, 5])
        #expect(Self.drain(b) == [4, 5])
        let first = fanOut.join()
        fanOut.publish(Self.frame(6))
        #expect(Self.drain(first) == [], "a delta frame is no start")
        _ = [a, b, first]
    }

    /// The camera's own H.264 (nothing to ask): a joining consumer gets the run since the
    /// last keyframe at once, keyframe first.
    @Test func aJoiningConsumerGetsTheLastRunAtOnce() {
        let producer = Producer()
        let fanOut = H264FanOut(queueLimit: 8, policy: .replayLastRun, hooks: producer.hooks)
        let a = fanOut.join()
        fanOut.publish(Self.frame(1))  // before any keyframe: no run
        fanOut.publish(Self.frame(2, key: true))
        fanOut.publish(Self.frame(3))
        fanOut.publish(Self.frame(4))
        let b = fanOut.join()
        #expect(producer.log == ["start"], "nothing asked of a source that cannot make keyframes")
        let firstOfB = b.next(timeout: .zero)
        #expect(firstOfB?.isKeyframe == true)
        #expect(firstOfB.map { $0.timestampMicroseconds / 33_333 } == 2)
        fanOut.publish(Self.frame(5))
        #expect(Self.drain(b) == [3, 4, 5])
        #expect(Self.drain(a) == [2, 3, 4, 5])
    }

    /// A run longer than a queue is not kept: the joining consumer waits for the next
    /// keyframe (and the producer is asked for one) rather than get an unbounded backlog.
    @Test func aRunLongerThanAQueueIsNotReplayed() {
        let producer = Producer()
        let fanOut = H264FanOut(queueLimit: 3, policy: .replayLastRun, hooks: producer.hooks)
        let a = fanOut.join()
        fanOut.publish(Self.frame(1, key: true))
        for n in 2...3 { fanOut.publish(Self.frame(Int64(n))) }
        let fits = fanOut.join()
        #expect(Self.drain(fits) == [1, 2, 3])
        #expect(Self.drain(a) == [1, 2, 3])
        fanOut.publish(Self.frame(4))  // the run is now 4 long
        #expect(Self.drain(fits) == [4])
        let late = fanOut.join()
        #expect(producer.log == ["start", "keyframe"])
        #expect(Self.drain(late) == [])
        fanOut.publish(Self.frame(5, key: true))
        #expect(Self.drain(late) == [5])
        _ = [a, fits]
    }

    /// A consumer that stops reading loses frames — its queue never holds more than the
    /// limit, and it restarts at a keyframe — while the one that reads gets every frame.
    @Test func aSlowConsumerDropsAloneAndRestartsAtAKeyframe() {
        let producer = Producer()
        let fanOut = H264FanOut(queueLimit: 4, policy: .askForKeyframe, hooks: producer.hooks)
        let fast = fanOut.join()
        let slow = fanOut.join()
        var got: [Int64] = []
        fanOut.publish(Self.frame(1, key: true))
        for n in Int64(2)...9 {
            fanOut.publish(Self.frame(n))
            got += Self.drain(fast)
        }
        #expect(got == Array(1...9))
        #expect(fast.dropped == 0)
        // slow held 1–4, then 5 found its queue full: 1–5 dropped, and it waits for a keyframe.
        #expect(slow.dropped == 5)
        #expect(producer.log == ["start", "keyframe", "keyframe"])
        #expect(Self.drain(slow) == [])
        fanOut.publish(Self.frame(10, key: true))
        fanOut.publish(Self.frame(11))
        #expect(Self.drain(slow) == [10, 11])
        #expect(Self.drain(fast) == [10, 11])
        #expect(fast.dropped == 0)
    }

    /// At the limit exactly nothing is lost; a keyframe that finds the queue full replaces it.
    @Test func theQueueLimitAtBothEnds() {
        let producer = Producer()
        let fanOut = H264FanOut(queueLimit: 3, policy: .askForKeyframe, hooks: producer.hooks)
        let c = fanOut.join()
        fanOut.publish(Self.frame(1, key: true))
        fanOut.publish(Self.frame(2))
        fanOut.publish(Self.frame(3))
        #expect(c.dropped == 0)
        #expect(Self.drain(c) == [1, 2, 3])
        for n in Int64(4)...6 { fanOut.publish(Self.frame(n)) }
        fanOut.publish(Self.frame(7, key: true))
        #expect(c.dropped == 4)
        #expect(Self.drain(c) == [7], "the keyframe starts the queue again at once")
        #expect(producer.log == ["start"], "no keyframe asked for: one came")
    }

    /// What a waiting thread got.
    final class Waiter: Sendable {
        let done = DispatchSemaphore(value: 0)
        let got = Mutex<EncodedFrame?>(nil)
        let started = Mutex(false)
        var frame: EncodedFrame? { got.withLock { $0 } }

        /// Starts a thread that waits for `c`'s next frame; returns once it waits.
        init(_ c: H264Consumer) {
            Thread.detachNewThread { [self] in
                started.withLock { $0 = true }
                let f = c.next(timeout: .seconds(30))
                got.withLock { $0 = f }
                done.signal()
            }
            while !started.withLock({ $0 }) { usleep(1000) }
            usleep(50_000)
        }
    }

    /// A consumer waiting for its next frame is woken by it, and by its own leaving. The
    /// waits run on threads of their own (a blocked wait must not hold a test runner's thread).
    @Test func nextWaitsForAFrame() {
        let producer = Producer()
        let fanOut = H264FanOut(queueLimit: 3, policy: .askForKeyframe, hooks: producer.hooks)
        let c = fanOut.join()
        #expect(c.next(timeout: .milliseconds(20)) == nil)
        let first = Waiter(c)
        fanOut.publish(Self.frame(1, key: true))
        #expect(first.done.wait(timeout: .now() + 30) == .success)
        #expect(first.frame.map { $0.timestampMicroseconds / 33_333 } == 1)
        let second = Waiter(c)
        c.leave()
        #expect(second.done.wait(timeout: .now() + 30) == .success)
        #expect(second.frame == nil)
    }
}
