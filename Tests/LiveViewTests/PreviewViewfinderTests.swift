#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Vocabulary
import Frames
import Synchronization
import Testing
import V4L2

@testable import LiveView
import Recording

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

    /// The frames a feed published.
    final class Published: Sendable {
        private let frames = Mutex<[PreviewFrame]>([])
        func add(_ frame: PreviewFrame) { frames.withLock { $0.append(frame) } }
        func withLock<R>(_ body: ([PreviewFrame]) -> R) -> R { frames.withLock { body($0) } }
    }

    /// A feed of the two-stream camera, 16 wide, and the frames it publishes.
    func feed(second: Bool, demand: ViewerDemand) -> (FrameSource, PreviewFeed, Published) {
        let viewfinder = ViewfinderFrames()
        let source = FrameSource(
            settings: StreamSettings(devicePath: "two-stream-camera"),
            opener: FrameStreamOpener { _ throws(StreamingError) in TwoStreamCamera(viewfinder: viewfinder, second: second) },
            logger: testLogger)
        let published = Published()
        let feed = PreviewFeed(
            source: { source }, viewfinder: viewfinder, previewWidth: 16, quality: 80, demand: demand, logger: testLogger,
            publish: { published.add($0) })
        return (source, feed, published)
    }

    func sizes(second: Bool) throws -> [(Int, Int)] {
        let demand = ViewerDemand()
        demand.set(ready: 1)
        let (source, feed, published) = feed(second: second, demand: demand)
        feed.start()
        _ = pollUntil(timeout: .seconds(20), every: .milliseconds(10)) { published.withLock { $0.count } >= 5 }
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

    /// A feed whose viewers can take nothing (docs/live-view.md#frames): it encodes
    /// nothing while none can, and the first frame once one can is the camera's newest, not
    /// one it held from before.
    @Test func nothingIsEncodedWhileNoViewerCanTakeAFrame() throws {
        let demand = ViewerDemand()
        let (source, feed, published) = feed(second: false, demand: demand)
        feed.start()
        defer {
            feed.stop()
            source.stopAndWait()
        }
        // The camera runs (the feed watches it), 10 ms a frame: half a second of frames.
        _ = try source.frame(nearest: monotonicNow(), timeout: .seconds(5))
        usleep(500_000)
        #expect(published.withLock { $0.isEmpty }, "encoded for nobody")
        #expect(pollUntil { demand.isPaused })
        // The camera's newest frame just before a viewer can take one.
        let newest = try source.frame(nearest: monotonicNow(), timeout: .seconds(5)).time
        demand.set(ready: 1)
        _ = pollUntil(timeout: .seconds(10), every: .milliseconds(1)) { !published.withLock { $0.isEmpty } }
        let first = try #require(published.withLock { $0.first })
        // The newest when a viewer could take it, or a later one; not the frame the feed
        // stopped at half a second before.
        #expect(first.time >= newest, "frame of \(first.time), the newest before the viewer \(newest)")
        #expect(!demand.isPaused)
        // None ready again: the frames stop (the feed pauses after the frame in hand).
        demand.set(ready: 0)
        #expect(pollUntil { demand.isPaused })
        let count = published.withLock { $0.count }
        usleep(300_000)
        #expect(published.withLock { $0.count } == count, "frames encoded while no viewer could take one")
    }
}
