#if canImport(Glibc)
import Glibc
#endif
import Vocabulary
import Logging
import NIOCore
import Synchronization
import V4L2
import Frames
import Recording

/// One frame of the live view, as every client gets it: one buffer shared by all (writing
/// it to N sockets copies nothing but into each socket).
struct PreviewFrame: Sendable {
    public var jpeg: ByteBuffer
    /// The frame's kernel timestamp (CLOCK_MONOTONIC).
    public var time: Timestamp
    public var sequence: UInt32
}

/// Takes the newest frame from the capture stream's ring (or from the camera's own small
/// stream for the live view, while it has one: ``ViewfinderFrames``), on a thread of its own,
/// only while someone watches: MJPEG frames as the camera sent them, uncompressed frames scaled
/// down and encoded once, and only while a viewer can take a frame (``ViewerDemand``).
/// Watching keeps the stream running (``FrameSource/addViewer()``).
final class PreviewFeed: Sendable {
    private let viewfinder: ViewfinderFrames?
    private let previewWidth: Int
    private let quality: Int
    private let publish: @Sendable (PreviewFrame) -> Void
    private let logger: Logger
    private let thread: WatchedFeed
    private let demand: ViewerDemand

    /// `demand`: whether a viewer can take a frame; nothing is encoded while none can.
    init(
        source: @escaping @Sendable () -> FrameSource?, viewfinder: ViewfinderFrames? = nil, previewWidth: Int, quality: Int,
        demand: ViewerDemand, logger: Logger, publish: @escaping @Sendable (PreviewFrame) -> Void
    ) {
        self.demand = demand
        thread = WatchedFeed(threadName: "evc-preview", source: source)
        self.viewfinder = viewfinder
        self.previewWidth = previewWidth
        self.quality = quality
        self.logger = logger
        self.publish = publish
    }

    /// The first viewer came.
    func start() { thread.start { [self] frames in feed(from: frames) } }

    /// The last viewer left: the thread ends after the frame it waits for.
    func stop() { thread.stop() }

    private var wanted: Bool { thread.isWanted }

    /// Frames until nobody watches, or the camera changed or failed (then the caller looks again).
    private func feed(from frames: FrameSource) {
        var last = Timestamp(microseconds: 0)
        while wanted {
            // Every viewer's socket is full (clients that read nothing, a stalled link):
            // nothing to encode for, until one can take a frame.
            guard demand.anyReady else {
                demand.pause(waitingAtMost: .milliseconds(500))
                continue
            }
            do {
                let ring: RingFrame
                if let viewfinder, viewfinder.format != nil {
                    // The camera's own small stream (the same requests as the ring's frames).
                    guard let newest = viewfinder.frame(after: last, timeout: .seconds(2)) else { continue }
                    ring = newest
                } else {
                    // The newest frame after the last one shown: never a backlog.
                    ring = try frames.newest(after: last, timeout: .seconds(2))
                }
                guard ring.time > last else { continue }
                // Nobody can take it after all: not encoded, and still the newest for the
                // first viewer that can.
                guard demand.anyReady else { continue }
                last = ring.time
                let jpeg = try Self.jpeg(ring.frame, previewWidth: previewWidth, quality: quality)
                demand.resume()
                publish(PreviewFrame(jpeg: ByteBuffer(bytes: jpeg), time: ring.time, sequence: ring.frame.sequence))
            } catch let error as StreamingError where error.code == .timedOut {
                continue
            } catch {
                logger.debug("live view: \(error)")
                sleepMilliseconds(500)
                return
            }
        }
    }

    /// MJPEG as sent; uncompressed frames scaled down by a whole factor to at most
    /// `previewWidth`, then encoded.
    static func jpeg(_ frame: VideoFrame, previewWidth: Int, quality: Int) throws -> [UInt8] {
        let f = frame.format
        guard !f.pixelFormat.isJPEG else { return try JPEG.data(from: frame, quality: quality) }
        let factor = max(1, (f.width + previewWidth - 1) / max(previewWidth, 1))
        guard factor > 1 else { return try JPEG.data(from: frame, quality: quality) }
        if f.pixelFormat == .yuyv {
            let (small, width, height) = downscaleYUYV(
                frame.bytes, width: f.width, height: f.height, bytesPerLine: f.bytesPerLine, by: factor)
            return try JPEG.encodeYUYV(small, width: width, height: height, bytesPerLine: width * 2, quality: quality)
        }
        guard let minimum = f.minimumFrameBytes, frame.bytes.count >= minimum, let small = downscale(frame.bytes, f, by: factor) else {
            return try JPEG.data(from: frame, quality: quality)  // its error names the problem
        }
        return try JPEG.encode(small.bytes, format: small.format, quality: quality)
    }

    private func sleepMilliseconds(_ ms: Int) {
        usleep(UInt32(ms) * 1000)
    }
}

/// Every `factor`-th pixel of every `factor`-th row of a packed RGB3/BGR3 frame (in its
/// own order), or of a YU12/NV12 frame as YU12 (chroma from the sampled pixel's sample);
/// nil for other formats. The frame must hold ``StreamFormat/minimumFrameBytes``.
func downscale(_ src: [UInt8], _ f: StreamFormat, by factor: Int) -> (bytes: [UInt8], format: StreamFormat)? {
    guard let planes = f.planes else { return nil }
    let w = max(1, f.width / factor), h = max(1, f.height / factor)
    switch f.pixelFormat {
    case .rgb24, .bgr24:
        var out = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h {
            let row = y * factor * f.bytesPerLine
            for x in 0..<w {
                let s = row + x * factor * 3, d = (y * w + x) * 3
                out[d] = src[s]
                out[d + 1] = src[s + 1]
                out[d + 2] = src[s + 2]
            }
        }
        return (out, StreamFormat(width: w, height: h, pixelFormat: f.pixelFormat, bytesPerLine: w * 3))
    case .yuv420, .nv12:
        let small = StreamFormat(width: w, height: h, pixelFormat: .yuv420, bytesPerLine: w)
        guard let dst = small.planes, let count = small.minimumFrameBytes else { return nil }
        var out = [UInt8](repeating: 0, count: count)
        for y in 0..<h {
            for x in 0..<w { out[y * w + x] = src[y * factor * f.bytesPerLine + x * factor] }
        }
        for y in 0..<dst[1].rows {
            // The chroma sample of the full frame's pixel (2x·factor, 2y·factor).
            let sy = min(y * factor, planes[1].rows - 1)
            for x in 0..<dst[1].rowBytes {
                let sx = min(x * factor, (f.width + 1) / 2 - 1)
                let (cb, cr): (UInt8, UInt8)
                if f.pixelFormat == .nv12 {
                    let s = planes[1].offset + sy * planes[1].bytesPerLine + 2 * sx
                    (cb, cr) = (src[s], src[s + 1])
                } else {
                    (cb, cr) = (
                        src[planes[1].offset + sy * planes[1].bytesPerLine + sx], src[planes[2].offset + sy * planes[2].bytesPerLine + sx]
                    )
                }
                out[dst[1].offset + y * dst[1].bytesPerLine + x] = cb
                out[dst[2].offset + y * dst[2].bytesPerLine + x] = cr
            }
        }
        return (out, small)
    default:
        return nil
    }
}

/// A YUYV image with every `factor`-th pixel of every `factor`-th row (chroma from the
/// sampled pixel's pair); the width is kept even.
func downscaleYUYV(_ src: [UInt8], width: Int, height: Int, bytesPerLine: Int, by factor: Int) -> ([UInt8], Int, Int) {
    let w = max(2, (width / factor) & ~1)
    let h = max(1, height / factor)
    var out = [UInt8](repeating: 0, count: w * h * 2)
    out.withUnsafeMutableBufferPointer { dst in
        src.withUnsafeBufferPointer { s in
            for y in 0..<h {
                let row = y * factor * bytesPerLine
                guard row + width * 2 <= s.count else { break }
                for m in 0..<(w / 2) {
                    let x0 = 2 * m * factor, x1 = (2 * m + 1) * factor
                    let pair = row + (x0 / 2) * 4
                    let o = (y * w + 2 * m) * 2
                    dst[o] = s[row + (x0 / 2) * 4 + (x0 % 2) * 2]
                    dst[o + 1] = s[pair + 1]
                    dst[o + 2] = s[row + (x1 / 2) * 4 + (x1 % 2) * 2]
                    dst[o + 3] = s[pair + 3]
                }
            }
        }
    }
    return (out, w, h)
}
