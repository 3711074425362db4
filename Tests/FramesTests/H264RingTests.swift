import EvcaptureTesting
import Vocabulary
import Foundation
import Synchronization
import Testing
import V4L2

@testable import Frames

/// A camera that sends H.264 (`V4L2_PIX_FMT_H264`): an access unit every 10 ms from the time
/// it opened, an IDR frame every `gop` frames (frame 0 is one), the rest P frames; the frame's
/// number in its last byte.
final class FakeH264Stream: FrameStream {
    let format = StreamFormat(width: 16, height: 16, pixelFormat: .h264, bytesPerLine: 0, framesPerSecond: 100)
    let opened = monotonicNow().microseconds
    let gop: Int
    /// Frames the camera drops: never delivered, their sequence numbers skipped.
    let drops: Set<Int>
    private var delivered = 0

    init(gop: Int, drops: Set<Int> = []) {
        self.gop = gop
        self.drops = drops
    }

    func time(_ k: Int) -> Int64 { Self.time(k, openedAt: opened) }
    static func time(_ k: Int, openedAt opened: Int64) -> Int64 { opened + Int64(k) * 10_000 }

    /// Annex B: SPS, PPS and an IDR slice (type 5), or one non-IDR slice (type 1).
    static func accessUnit(_ k: Int, idr: Bool) -> [UInt8] {
        let number = UInt8(truncatingIfNeeded: k)
        return idr ? [0, 0, 0, 1, 0x67, 0x42, 0, 0, 1, 0x68, 0xCE, 0, 0, 1, 0x65, 0x88, number] : [0, 0, 0, 1, 0x41, 0x9A, number]
    }

    func withNextFrame(timeout: Duration, _ body: (BorrowedFrame) -> Void) throws(StreamingError) {
        while drops.contains(delivered) { delivered += 1 }
        let due = time(delivered) - monotonicNow().microseconds
        if due > 0 { usleep(UInt32(due)) }
        Self.accessUnit(delivered, idr: delivered % gop == 0).withUnsafeBytes { raw in
            body(
                BorrowedFrame(
                    bytes: raw, sequence: UInt32(delivered), timestampMicroseconds: time(delivered),
                    timestampKind: FrameTimestampKind(isMonotonic: true, isStartOfExposure: false)))
        }
        delivered += 1
    }

    func close() {}
}

/// Where a recording from a camera's H.264 starts (docs/video.md#the-cameras-own-h264): at a
/// keyframe, the last at or before the press minus the pre-roll.
@Suite struct H264RingTests {
    func t(_ ms: Int64) -> Timestamp { Timestamp(microseconds: ms * 1000) }

    @Test func aStreamOfPicturesStartsAtTheFrameNearestTheMoment() {
        let times = [t(0), t(10), t(20), t(30)]
        let all = [Bool](repeating: true, count: 4)
        #expect(FrameSource.startFrame(times: times, keyframes: all, at: t(14)) == 1)
        #expect(FrameSource.startFrame(times: times, keyframes: all, at: t(16)) == 2)
        // Before the oldest: the oldest; after the newest: the newest.
        #expect(FrameSource.startFrame(times: times, keyframes: all, at: t(-50)) == 0)
        #expect(FrameSource.startFrame(times: times, keyframes: all, at: t(99)) == 3)
        #expect(FrameSource.startFrame(times: [], keyframes: [], at: t(0)) == nil)
    }

    @Test func h264StartsAtTheLastKeyframeAtOrBeforeTheMoment() {
        let times = (0..<10).map { t(Int64($0) * 10) }
        let keyframes = (0..<10).map { $0 % 4 == 1 }  // frames 1, 5, 9
        // Frame 8 is nearest 79 ms, but it refers to the frames before it: frame 5 starts.
        #expect(FrameSource.startFrame(times: times, keyframes: keyframes, at: t(79)) == 5)
        // A keyframe at the moment itself is taken; a microsecond before it, the one before.
        #expect(FrameSource.startFrame(times: times, keyframes: keyframes, at: t(50)) == 5)
        #expect(FrameSource.startFrame(times: times, keyframes: keyframes, at: Timestamp(microseconds: 49_999)) == 1)
        // After the newest keyframe: that one.
        #expect(FrameSource.startFrame(times: times, keyframes: keyframes, at: t(500)) == 9)
        // The ring holds no keyframe at or before the moment: the first after it.
        #expect(FrameSource.startFrame(times: times, keyframes: keyframes, at: t(5)) == 1)
        #expect(FrameSource.startFrame(times: times, keyframes: keyframes, at: t(-100)) == 1)
        // None at all: nothing to start from yet.
        #expect(FrameSource.startFrame(times: times, keyframes: [Bool](repeating: false, count: 10), at: t(50)) == nil)
    }

    @Test func annexBAccessUnitsAreKeyframesWhenTheyHoldAnIDRSlice() {
        #expect(AnnexB.containsIDR(FakeH264Stream.accessUnit(0, idr: true)))
        #expect(!AnnexB.containsIDR(FakeH264Stream.accessUnit(0, idr: false)))
        // Three-byte start codes; an SEI (type 6) before the slice.
        #expect(AnnexB.containsIDR([0, 0, 1, 6, 5, 0x80, 0, 0, 1, 0x25, 0x88]))
        #expect(!AnnexB.containsIDR([0, 0, 1, 0x67, 0x42, 0, 0, 1, 0x68]))
        #expect(!AnnexB.containsIDR([]))
    }

    /// A started ring fed by a fake H.264 camera (an IDR frame every 8, `drops` left out) with
    /// its first frame in, and when that camera opened (its frames' times count from it).
    static func startedRing(drops: Set<Int> = [], pictures: PictureDecoder? = nil) throws -> (FrameSource, openedAt: Int64) {
        let opened = Mutex<Int64?>(nil)
        let source = FrameSource(
            settings: StreamSettings(devicePath: "fake-h264", pixelFormats: [.h264]),
            opener: FrameStreamOpener { _ throws(StreamingError) in
                let fake = FakeH264Stream(gop: 8, drops: drops)
                opened.withLock { [at = fake.opened] in $0 = at }
                return fake
            }, pictures: pictures, logger: testLogger)
        source.start()
        do {
            _ = try source.frame(nearest: Timestamp(microseconds: 0), timeout: .seconds(5))
            return (source, try #require(opened.withLock { $0 }))
        } catch {
            source.stopAndWait()
            throw error
        }
    }

    /// Through the ring, as a recording reads it: the first frame is the IDR at or before
    /// the moment, and every frame from it follows in order.
    @Test func aReaderOfTheRingStartsAtTheKeyframeAndFollowsInOrder() throws {
        let (source, openedAt) = try Self.startedRing()
        defer { source.stopAndWait() }
        // Frames flow; then read from the moment of frame 21 (nearest: 21; keyframe: 16).
        let moment = Timestamp(microseconds: FakeH264Stream.time(21, openedAt: openedAt) + 2_000)
        var got: [(UInt8, Bool, Int64)] = []
        let counts = try source.frames(from: moment, timeout: .seconds(5)) { ring in
            got.append((ring.frame.bytes.last!, AnnexB.containsIDR(ring.frame.bytes), ring.time.microseconds))
            return got.count < 12
        }
        #expect(counts.skipped == 0)
        #expect(got.map(\.0) == Array(16..<28).map(UInt8.init), "\(got.map(\.0))")
        #expect(got.first?.1 == true && got.first?.2 == FakeH264Stream.time(16, openedAt: openedAt))
        #expect(got.dropFirst().filter(\.1).map(\.0) == [24])
    }

    /// A photo's frame from the camera's H.264: the picture the decoder makes from the run
    /// that starts at the keyframe at or before the nearest frame and ends with it.
    @Test func aPhotoIsDecodedFromTheKeyframeBeforeTheNearestFrame() throws {
        // Stands in for libavcodec: the picture's bytes are the numbers of the frames it was given.
        let (source, openedAt) = try Self.startedRing(
            pictures: PictureDecoder { run throws(StreamingError) in
                var last = run.last!
                last.bytes = run.map { $0.bytes.last! }
                last.format.pixelFormat = .yuv420
                return last
            })
        defer { source.stopAndWait() }
        let photo = try source.frame(
            nearest: Timestamp(microseconds: FakeH264Stream.time(21, openedAt: openedAt) + 3_000), timeout: .seconds(5))
        #expect(photo.frame.bytes == Array(16...21).map(UInt8.init), "\(photo.frame.bytes)")
        #expect(photo.time.microseconds == FakeH264Stream.time(21, openedAt: openedAt) && photo.frame.format.pixelFormat == .yuv420)
        // A keyframe itself: a run of one.
        let key = try source.frame(nearest: Timestamp(microseconds: FakeH264Stream.time(24, openedAt: openedAt)), timeout: .seconds(5))
        #expect(key.frame.bytes == [24])
        // Without a decoder, the access unit itself (JPEG encoding then says it is no picture).
        let plain = FrameSource(
            settings: StreamSettings(devicePath: "fake-h264", pixelFormats: [.h264]),
            opener: FrameStreamOpener { _ throws(StreamingError) in FakeH264Stream(gop: 8) }, logger: testLogger)
        defer { plain.stopAndWait() }
        let unit = try plain.frame(nearest: Timestamp(microseconds: 0), timeout: .seconds(5))
        #expect(unit.frame.format.pixelFormat == .h264)
    }

    /// Frames the camera dropped (its sequence jumped): the recording goes on from the next
    /// keyframe, and counts the dropped frames and those it left out as skipped; a photo whose
    /// run crosses the gap is an error, never a wrong picture.
    @Test func framesTheCameraDroppedAreSkippedToTheNextKeyframe() throws {
        let (source, openedAt) = try Self.startedRing(
            drops: [19, 20], pictures: PictureDecoder { run throws(StreamingError) in run.last! })
        defer { source.stopAndWait() }
        var got: [UInt8] = []
        let counts = try source.frames(from: Timestamp(microseconds: FakeH264Stream.time(17, openedAt: openedAt)), timeout: .seconds(5)) {
            got.append($0.frame.bytes.last!)
            return got.count < 5
        }
        // 16, 17, 18; 19 and 20 dropped; 21–23 need them; 24 is an IDR frame.
        #expect(got == [16, 17, 18, 24, 25], "\(got)")
        #expect(counts.skipped == 5)
        #expect(throws: StreamingError.self) {
            _ = try source.frame(nearest: Timestamp(microseconds: FakeH264Stream.time(22, openedAt: openedAt)), timeout: .seconds(5))
        }
        #expect(
            try source.frame(nearest: Timestamp(microseconds: FakeH264Stream.time(18, openedAt: openedAt)), timeout: .seconds(5)).frame
                .sequence == 18)
    }
}
