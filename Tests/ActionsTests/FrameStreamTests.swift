import EvcaptureTesting
import Evdev
import Foundation
import LinuxIO
import Synchronization
import Testing
import V4L2

@testable import Actions
@testable import Frames

/// A camera behind the capture stream's seam (``FrameStream``): frames 10 ms apart from the
/// time it opened, each with its own timestamp, then gone after `frames` of them.
final class FakeFrameStream: FrameStream {
    static let streamFormat = StreamFormat(width: 2, height: 1, pixelFormat: .yuyv, bytesPerLine: 4)
    let format = FakeFrameStream.streamFormat
    let opened = monotonicNow().microseconds
    let frames: Int
    let onClose: () -> Void
    private var delivered = 0
    private var bytes: [UInt8] = [0, 0, 0, 0]

    init(frames: Int, onClose: @escaping () -> Void) {
        self.frames = frames
        self.onClose = onClose
    }

    /// The time of frame `k` (µs, CLOCK_MONOTONIC).
    func time(_ k: Int) -> Int64 { Self.time(k, openedAt: opened) }
    static func time(_ k: Int, openedAt opened: Int64) -> Int64 { opened + Int64(k) * 10_000 }

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
        func opener(frames: Int) -> FrameStreamOpener {
            FrameStreamOpener { _ throws(StreamingError) in
                self.opens.add(1, ordering: .relaxed)
                let fake = FakeFrameStream(frames: frames) { self.closed.withLock { $0 = true } }
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
        let said = ContinuousClock.now + .seconds(5)
        while errors.withLock({ $0.isEmpty }) && ContinuousClock.now < said { usleep(10_000) }
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
        let held = try source.frame(nearest: Timestamp(microseconds: FakeFrameStream.time(5, openedAt: openedAt)), timeout: .seconds(5))
        #expect(held.frame.sequence == 5 && held.frame.bytes == [5, 0, 0, 0])
        // Ten frames later every slot has been written again (frame 15's slot among them).
        let later = try source.frame(nearest: Timestamp(microseconds: FakeFrameStream.time(15, openedAt: openedAt)), timeout: .seconds(5))
        #expect(later.frame.sequence == 15 && later.frame.bytes == [15, 0, 0, 0])
        #expect(held.frame.bytes == [5, 0, 0, 0])
        #expect(held.frame.sequence == 5)
    }
}
