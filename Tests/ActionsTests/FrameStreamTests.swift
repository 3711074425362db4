import EvcaptureTesting
import Vocabulary
import Foundation
import Synchronization
import Testing
import V4L2
@testable import Frames

/// A camera behind the capture stream's seam (``FrameStream``): frames `interval` µs apart
/// (10 ms unless told) from the time it opened, each with its own timestamp, then gone after
/// `frames` of them.
final class FakeFrameStream: FrameStream {
    static let streamFormat = StreamFormat(width: 2, height: 1, pixelFormat: .yuyv, bytesPerLine: 4)
    let format = FakeFrameStream.streamFormat
    let opened = monotonicNow().microseconds
    let frames: Int
    let interval: Int64
    let onClose: () -> Void
    private var delivered = 0
    private var bytes: [UInt8] = [0, 0, 0, 0]

    init(frames: Int, interval: Int64 = 10_000, onClose: @escaping () -> Void) {
        self.frames = frames
        self.interval = interval
        self.onClose = onClose
    }

    /// The time of frame `k` (µs, CLOCK_MONOTONIC).
    func time(_ k: Int) -> Int64 { Self.time(k, openedAt: opened, interval: interval) }
    static func time(_ k: Int, openedAt opened: Int64, interval: Int64 = 10_000) -> Int64 { opened + Int64(k) * interval }

    func withNextFrame(timeout: Duration, _ body: (BorrowedFrame) -> Void) throws(StreamingError) {
        guard delivered < frames else {
            throw StreamingError(code: .deviceRemoved, errno: 19, context: "the fake camera was disconnected")
        }
        let due = time(delivered) - monotonicNow().microseconds
        if due > 0 { usleep(UInt32(due)) }
        bytes[0] = UInt8(truncatingIfNeeded: delivered)
        bytes.withUnsafeBytes { raw in
            body(
                BorrowedFrame(
                    bytes: raw, sequence: UInt32(delivered), timestampMicroseconds: time(delivered),
                    timestampKind: FrameTimestampKind(isMonotonic: true, isStartOfExposure: true)))
        }
        delivered += 1
    }

    func close() { onClose() }
}

@Suite struct FrameStreamTests {
    let logger = testLogger

    /// An opener that hands out fake cameras and keeps when the last one opened.
    final class Opened: Sendable {
        let openedAt = Mutex<Int64?>(nil)
        let closed = Mutex(false)
        let opens = Atomic<Int>(0)
        func opener(frames: Int, interval: Int64 = 10_000) -> FrameStreamOpener {
            FrameStreamOpener { _ throws(StreamingError) in
                self.opens.add(1, ordering: .relaxed)
                let fake = FakeFrameStream(frames: frames, interval: interval) { self.closed.withLock { $0 = true } }
                self.openedAt.withLock { [opened = fake.opened] in $0 = opened }
                return fake
            }
        }
    }

    @Test func aPhotoIsTheFrameNearestThePressByTheCamerasOwnTime() throws {
        let opened = Opened()
        let source = FrameSource(
            settings: StreamSettings(devicePath: "fake-camera"), opener: opened.opener(frames: 1000),
            logger: logger)
        source.start()
        defer { source.stopAndWait() }
        // Wait until frames flow, then ask for the moment of frame 20 plus 3 ms: frame 20 is nearest.
        _ = try source.frame(nearest: Timestamp(microseconds: 0), timeout: .seconds(5))
        let openedAt = try #require(opened.openedAt.withLock { $0 })
        let press = FakeFrameStream.time(20, openedAt: openedAt) + 3_000
        let photo = try source.frame(nearest: Timestamp(microseconds: press), timeout: .seconds(5))
        #expect(photo.time.microseconds == FakeFrameStream.time(20, openedAt: openedAt))
        #expect(photo.frame.sequence == 20 && photo.frame.bytes == [20, 0, 0, 0])
        #expect(photo.frame.format == FakeFrameStream.streamFormat)
        #expect(photo.timestampKind.isMonotonic)
        #expect(opened.opens.load(ordering: .relaxed) == 1)
    }

    /// The camera's cadence from the ring (docs/booth.md#timelapse): the time of its frame
    /// nearest a moment, one it took or one to come; none before the ring holds two frames.
    @Test func theFrameNearestAMomentIsKnownFromTheCamerasCadence() throws {
        let opened = Opened()
        let source = FrameSource(settings: StreamSettings(devicePath: "fake-camera"), opener: opened.opener(frames: 1000), logger: logger)
        #expect(source.frameTime(nearest: monotonicNow()) == nil, "a cadence before the stream ran")
        source.start()
        defer { source.stopAndWait() }
        let openedAt = try #require(
            try { () throws -> Int64? in
                _ = try source.frame(nearest: Timestamp(microseconds: 0), timeout: .seconds(5))
                return opened.openedAt.withLock { $0 }
            }())
        _ = try source.frame(nearest: Timestamp(microseconds: FakeFrameStream.time(5, openedAt: openedAt)), timeout: .seconds(5))
        let frame = { (k: Int) in FakeFrameStream.time(k, openedAt: openedAt) }
        // A frame the ring holds, a frame to come, and half way between two: the later.
        for (moment, expected) in [
            (frame(3) + 4_999, frame(3)), (frame(3) + 5_000, frame(4)), (frame(500) - 4_999, frame(500)), (frame(2) - 5_001, frame(1)),
        ] {
            #expect(source.frameTime(nearest: Timestamp(microseconds: moment))?.microseconds == expected, "moment \(moment)")
        }
    }

    /// The grid's arithmetic at its ends: a moment long before or after the newest frame, a
    /// fractional interval, and intervals that are no cadence at all.
    @Test func theFrameGridRoundsHalfWayToTheLaterFrameAndRefusesNoInterval() {
        let newest = Timestamp(microseconds: 1_000_000)
        func t(_ time: Int64, _ interval: Double) -> Int64? {
            FrameSource.frameTime(nearest: Timestamp(microseconds: time), newest: newest, interval: interval)?.microseconds
        }
        #expect(t(1_000_000, 33_333.3) == 1_000_000)
        #expect(t(1_115_999, 33_333.3) == Int64(1_100_000))  // 3 frames on: 99,999.9 µs
        #expect(t(1_000_000 - 50_000, 100_000) == 1_000_000)  // half way before: the later, the newest
        #expect(t(1_000_000 - 50_001, 100_000) == 900_000)
        #expect(t(86_401_000_000, 200_000) == Int64(86_401_000_000))  // a day on
        #expect(t(0, 1) == 0)  // the smallest interval
        #expect(t(5, 0.999) == nil && t(5, 0) == nil && t(5, -200_000) == nil && t(5, .nan) == nil && t(5, .infinity) == nil)
    }

    /// A live view takes the newest frame after the one it showed (docs/live-view.md): a
    /// frame the camera already took is handed out at once, not after the camera's next one.
    @Test func aLiveViewGetsTheNewestFrameWithoutWaitingForTheNext() throws {
        let opened = Opened()
        // A frame a second: frame 1 at 1 s, frame 2 at 2 s.
        let source = FrameSource(
            settings: StreamSettings(devicePath: "fake-camera"), opener: opened.opener(frames: 10, interval: 1_000_000),
            logger: logger)
        source.start()
        defer { source.stopAndWait() }
        let first = try source.newest(after: Timestamp(microseconds: 0), timeout: .seconds(5))
        let openedAt = try #require(opened.openedAt.withLock { $0 })
        #expect(first.frame.sequence == 0 && first.time.microseconds == openedAt)
        // Asked 100 ms after frame 1 was taken: frame 1, before frame 2 is due.
        let due1 = FakeFrameStream.time(1, openedAt: openedAt, interval: 1_000_000)
        let due2 = FakeFrameStream.time(2, openedAt: openedAt, interval: 1_000_000)
        usleep(UInt32(max(0, due1 + 100_000 - monotonicNow().microseconds)))
        let next = try source.newest(after: first.time, timeout: .seconds(5))
        let returned = monotonicNow().microseconds
        #expect(next.frame.sequence == 1 && next.time.microseconds == due1)
        #expect(returned < due2, "handed out \((returned - due1) / 1000) ms after frame 1, after frame 2 was due")
    }

    @Test func aCameraThatVanishesEndsTheRingWithItsError() throws {
        let opened = Opened()
        let errors = Mutex<[StreamingError]>([])
        let source = FrameSource(
            settings: StreamSettings(devicePath: "fake-camera"), opener: opened.opener(frames: 5),
            logger: logger, onError: { error in errors.withLock { $0.append(error) } })
        // A video's reader follows the ring until the camera is gone. This one is slower
        // than the camera (50 ms a frame, the camera 10 ms): the camera is gone before it
        // took the second frame.
        var seen: [Int64] = []
        #expect {
            _ = try source.frames(from: Timestamp(microseconds: 0), timeout: .seconds(5)) { frame in
                seen.append(frame.time.microseconds)
                usleep(50_000)
                return true
            }
        } throws: { ($0 as? StreamingError)?.code == .deviceRemoved }
        let openedAt = try #require(opened.openedAt.withLock { $0 })
        // Every frame the ring held when the camera went, in order, each with the camera's
        // own time; then the camera's error.
        #expect(seen == (0..<5).map { FakeFrameStream.time($0, openedAt: openedAt) }, "\(seen)")
        #expect(!source.isRunning)
        #expect(opened.closed.withLock { $0 })
        // Said once, by the stream's thread as it ends (after it woke the reader).
        _ = pollUntil(every: .milliseconds(10)) { !errors.withLock { $0.isEmpty } }
        #expect(errors.withLock { $0.map(\.code) } == [.deviceRemoved])
        // A later reader starts the camera again (a camera that came back).
        _ = try? source.frame(nearest: Timestamp(microseconds: 0), timeout: .seconds(2))
        #expect(opened.opens.load(ordering: .relaxed) == 2)
    }

    /// A reader is handed the slot's storage, not a copy made under the ring's lock
    /// (docs/video.md, "Off the input path"): when the stream comes round to that slot while
    /// the reader still holds the frame, the reader's bytes stay those of its frame.
    @Test func aFrameHeldByAReaderKeepsItsBytesWhenTheRingComesRoundToItsSlot() throws {
        let opened = Opened()
        // Three slots (the fewest the limits give): the stream overwrites a slot every 30 ms.
        let source = FrameSource(
            settings: StreamSettings(devicePath: "fake-camera"), limits: RingLimits(seconds: 0, memoryBytes: 12),
            opener: opened.opener(frames: 1000), logger: logger)
        source.start()
        defer { source.stopAndWait() }
        _ = try source.frame(nearest: Timestamp(microseconds: 0), timeout: .seconds(5))
        #expect(source.capacity == 3)
        let openedAt = try #require(opened.openedAt.withLock { $0 })
        // The frame nearest frame 5's time: frame 5, or a later one when this thread ran late
        // and the ring had already come round.
        let held = try source.frame(nearest: Timestamp(microseconds: FakeFrameStream.time(5, openedAt: openedAt)), timeout: .seconds(5))
        let s = held.frame.sequence
        func bytes(_ sequence: UInt32) -> [UInt8] { [UInt8(truncatingIfNeeded: sequence), 0, 0, 0] }
        #expect(s >= 5 && held.frame.bytes == bytes(s))
        // Ten frames later every slot has been written again (the held frame's slot among them).
        let tenLater = Timestamp(microseconds: FakeFrameStream.time(Int(s) + 10, openedAt: openedAt))
        let later = try source.frame(nearest: tenLater, timeout: .seconds(5))
        #expect(later.frame.sequence >= s + 3 && later.frame.bytes == bytes(later.frame.sequence))
        #expect(held.frame.bytes == bytes(s))
        #expect(held.frame.sequence == s)
    }
}
