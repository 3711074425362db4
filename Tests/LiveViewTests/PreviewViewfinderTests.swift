#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Evdev
import Frames
import Synchronization
import Testing
import V4L2

@testable import LiveView
import Media

/// A camera with a second, small stream for the live view (docs/libcamera.md#two-streams):
/// the live view encodes that stream's frames, not the ring's; once the stream has no
/// second stream any more it reads the ring again.
@Suite struct PreviewViewfinderTests {
    /// 64×48 YUYV frames 10 ms apart into the ring and, while `second` is set, an 8×6 YU12
    /// frame of the same time into `viewfinder`.
    final class TwoStreamCamera: FrameStream {
        static let small = StreamFormat(width: 8, height: 6, pixelFormat: .yuv420, bytesPerLine: 8)
        let format = StreamFormat(width: 64, height: 48, pixelFormat: .yuyv, bytesPerLine: 128)
        let viewfinder: ViewfinderFrames
        let second: Bool
        private var k: Int64 = 0
        private let bytes = [UInt8](repeating: 128, count: 64 * 48 * 2)

        init(viewfinder: ViewfinderFrames, second: Bool) {
            self.viewfinder = viewfinder
            self.second = second
            viewfinder.begin(second ? Self.small : nil)
        }

        func withNextFrame(timeout: Duration, _ body: (BorrowedFrame) -> Void) throws(StreamingError) {
            usleep(10_000)
            k += 1
            let time = monotonicNow()
            let kind = FrameTimestampKind(isMonotonic: true, isStartOfExposure: true)
            bytes.withUnsafeBytes {
                body(BorrowedFrame(bytes: $0, sequence: UInt32(k), timestampMicroseconds: time.microseconds, timestampKind: kind))
            }
            if second {
                viewfinder.store(count: Self.small.minimumFrameBytes!, sequence: UInt32(k), time: time, kind: kind) { slot in
                    for i in slot.indices { slot[i] = 90 }
                }
            }
        }

        func close() { viewfinder.begin(nil) }
    }

    func sizes(second: Bool) throws -> [(Int, Int)] {
        let viewfinder = ViewfinderFrames()
        let source = FrameSource(
            settings: StreamSettings(devicePath: "two-stream-camera"),
            opener: FrameStreamOpener { _ throws(StreamingError) in TwoStreamCamera(viewfinder: viewfinder, second: second) },
            logger: testLogger)
        let published = Mutex<[PreviewFrame]>([])
        let feed = PreviewFeed(source: { source }, viewfinder: viewfinder, previewWidth: 16, quality: 80, logger: testLogger) { frame in
            published.withLock { $0.append(frame) }
        }
        feed.start()
        let deadline = ContinuousClock.now + .seconds(20)
        while published.withLock({ $0.count }) < 5 && ContinuousClock.now < deadline { usleep(10_000) }
        feed.stop()
        source.stopAndWait()
        let frames = published.withLock { $0 }
        #expect(frames.count >= 5, "\(frames.count) frames published")
        return try frames.map { frame in
            let info = try JPEG.decode(Array(frame.jpeg.readableBytesView))
            return (info.width, info.height)
        }
    }

    @Test func theLiveViewEncodesTheSecondStreamsFramesWhileThereIsOne() throws {
        // The ring's would be 16×12 (64×48 scaled down by 4); the first frame may come from
        // the ring before the stream has begun.
        let got = try sizes(second: true)
        #expect(got.dropFirst().allSatisfy { $0 == (8, 6) }, "\(got)")
    }

    @Test func withoutASecondStreamTheLiveViewScalesTheRingsFrames() throws {
        let got = try sizes(second: false)
        #expect(got.allSatisfy { $0 == (16, 12) }, "\(got)")
    }
}
