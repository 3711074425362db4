#if canImport(Glibc)
import Glibc
#endif
import Vocabulary
import Frames
import Logging
import Movie
import Synchronization
import V4L2

/// The camera's live H.264, made once however many watch (docs/live-view.md#h264): while
/// anyone is joined, a thread of its own takes the capture stream's frames and either encodes
/// them (``H264LiveEncoder``, the newest frame each time: a slow encoder skips frames rather
/// than fall behind) or, from a camera that sends H.264, passes its access units through as
/// they are, every one in order. The frames go to an ``H264FanOut``. Nothing runs while no
/// one watches, and the input path never waits for any of it.
public final class LiveH264Stream: Sendable {
    /// What the stream is made from and how.
    public struct Source: Sendable {
        /// The capture stream (nil while there is no camera: looked for again every half second).
        public var frames: @Sendable () -> FrameSource?
        public var settings: H264Settings
        /// The encoder for cameras that do not send H.264 (nil: none, such cameras give no stream).
        public var encoder: @Sendable () -> Result<EncoderChoice, MovieError>

        public init(
            frames: @escaping @Sendable () -> FrameSource?, settings: H264Settings,
            encoder: @escaping @Sendable () -> Result<EncoderChoice, MovieError>
        ) {
            self.frames = frames
            self.settings = settings
            self.encoder = encoder
        }
    }

    private let source: Source
    private let logger: Logger
    private let thread: WatchedFeed
    private let keyframeAsked = Mutex(false)
    /// The fan-out consumers join.
    public let fanOut: H264FanOut

    public init(source: Source, queueLimit: Int = 30, logger: Logger) {
        self.source = source
        self.logger = logger
        thread = WatchedFeed(threadName: "evc-live-h264", source: source.frames)
        // Bound late: the hooks call back into this object.
        let box = WeakBox()
        fanOut = H264FanOut(
            queueLimit: queueLimit, policy: .askForKeyframe,
            hooks: .init(start: { box.stream?.start() }, stop: { box.stream?.stop() }, keyframe: { box.stream?.askKeyframe() }))
        box.stream = self
    }

    /// A new consumer (RTSP client, live viewer): its frames start at a keyframe.
    public func join() -> H264Consumer { fanOut.join() }

    private func start() { thread.start { [self] frames in feed(from: frames) } }

    private func stop() { thread.stop() }

    private func askKeyframe() { keyframeAsked.withLock { $0 = true } }

    private var wanted: Bool { thread.isWanted }

    /// Frames until nobody watches, or the camera changed or failed (then the caller looks again).
    private func feed(from frames: FrameSource) {
        // An encoder makes a keyframe when asked; the camera's own H.264 cannot be asked.
        if frames.settings.wantsH264 {
            fanOut.policy = .replayLastRun
            logger.info("live H.264: the camera's own, passed through as it sends it")
            passThrough(frames)
            return
        }
        fanOut.policy = .askForKeyframe
        // The format is known once the stream runs (its first frame).
        guard let format = frames.format ?? (try? frames.frame(nearest: monotonicNow(), timeout: .seconds(2)))?.frame.format else {
            return
        }
        encode(frames, format: format)
    }

    /// The camera's own H.264: every access unit in order from a keyframe (the ring skips to
    /// the next keyframe after a gap).
    private func passThrough(_ frames: FrameSource) {
        do {
            _ = try frames.frames(from: monotonicNow(), timeout: .seconds(2)) { ring in
                fanOut.publish(
                    EncodedFrame(
                        bytes: ring.frame.bytes, timestampMicroseconds: ring.frame.timestampMicroseconds,
                        isKeyframe: AnnexB.containsIDR(ring.frame.bytes)))
                return wanted
            }
        } catch {
            logger.debug("live H.264: \(error)")
            usleep(500_000)
        }
    }

    private func encode(_ frames: FrameSource, format: StreamFormat) {
        let encoder: H264LiveEncoder
        do {
            encoder = try H264LiveEncoder(format: format, settings: source.settings, encoder: source.encoder().get())
        } catch {
            logger.warning("live H.264: cannot encode the camera's \(format.pixelFormat) frames: \(error)")
            usleep(2_000_000)
            return
        }
        logger.info("live H.264: encoding the camera's \(format.width)×\(format.height) \(format.pixelFormat) frames")
        var last = Timestamp(microseconds: 0)
        while wanted {
            do {
                // The newest frame after the last one encoded: never a backlog.
                let ring = try frames.newest(after: last, timeout: .seconds(2))
                guard ring.time > last else { continue }
                guard ring.frame.format == format else { return }  // the camera changed: a new encoder
                last = ring.time
                let keyframe = keyframeAsked.withLock { asked -> Bool in
                    defer { asked = false }
                    return asked
                }
                for unit in try encoder.encode(ring.frame.bytes, at: ring.frame.timestampMicroseconds, keyframe: keyframe) {
                    fanOut.publish(unit)
                }
            } catch let error as StreamingError where error.code == .timedOut {
                continue
            } catch {
                logger.debug("live H.264: \(error)")
                usleep(500_000)
                return
            }
        }
    }

    /// The fan-out's hooks reach the stream through this: a strong reference would be a
    /// cycle (stream → fan-out → hooks → stream).
    private final class WeakBox: Sendable {
        private struct Weak { weak var stream: LiveH264Stream? }
        private let value = Mutex(Weak())
        var stream: LiveH264Stream? {
            get { value.withLock { $0.stream } }
            set { value.withLock { $0.stream = newValue } }
        }
    }
}
