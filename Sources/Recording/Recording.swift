#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import Synchronization
import V4L2
import Vocabulary
import LinuxIO
import Movie
import Frames

/// Where and how photos and videos are taken.
public struct CaptureSettings: Sendable, Hashable {
    /// The camera and how the capture stream opens it.
    public var stream: StreamSettings
    /// The V4L2 capture node (`/dev/video0`, `/dev/v4l/by-id/...`).
    public var devicePath: String {
        get { stream.devicePath }
        set { stream.devicePath = newValue }
    }
    /// The directory files are written to (must exist and be writable).
    public var outputDirectory: String
    public var photoPattern: FileNamePattern
    public var videoPattern: FileNamePattern
    /// Requested frame size; nil keeps the camera's current size.
    public var width: Int? {
        get { stream.width }
        set { stream.width = newValue }
    }
    public var height: Int? {
        get { stream.height }
        set { stream.height = newValue }
    }
    /// JPEG quality for uncompressed frames (MJPEG frames are stored as the camera sent them).
    public var jpegQuality: Int
    /// The longest wait for one frame before giving up with a `camera-timeout` error.
    public var frameTimeout: Duration {
        get { stream.frameTimeout }
        set { stream.frameTimeout = newValue }
    }
    /// Size limit of one video file.
    var maximumVideoBytes: Int
    /// MP4 (H.264) or AVI (MJPEG).
    public var videoFormat: VideoFormat
    /// How MP4 videos are encoded.
    public var h264: H264Settings
    /// When the capture stream runs (docs/behaviour.md#the-moment-of-the-press).
    public var streamMode: StreamMode
    /// Which moment a click's photo shows.
    public var photoMoment: PhotoMoment
    /// Seconds of video before the press a long press's recording starts with.
    public var preRoll: Duration
    /// How much the ring keeps.
    public var ring: RingLimits
    /// `on-press` mode: the stream stops after this long without a press.
    public var streamIdleStop: Duration
    /// The frame rate to ask the camera for; nil keeps the driver's.
    public var framesPerSecond: Double? {
        get { stream.framesPerSecond }
        set { stream.framesPerSecond = newValue }
    }
    /// The pixel formats to ask the camera for, in order (the first it offers is taken).
    public var pixelFormats: [PixelFormat] {
        get { stream.pixelFormats }
        set { stream.pixelFormats = newValue }
    }

    /// Which moment a click's photo shows.
    public enum PhotoMoment: String, Sendable, Hashable, CaseIterable {
        /// The frame nearest the press's `began` (zero shutter lag; the default).
        case press
        /// The frame nearest the release (`ended`).
        case release
    }

    public init(
        devicePath: String, outputDirectory: String,
        photoPattern: FileNamePattern = .defaultPhoto, videoPattern: FileNamePattern? = nil,
        width: Int? = nil, height: Int? = nil, jpegQuality: Int = 90, frameTimeout: Duration = .seconds(3),
        maximumVideoBytes: Int = 1 << 30, streamMode: StreamMode = .always,
        photoMoment: PhotoMoment = .press, preRoll: Duration = .zero, ring: RingLimits = RingLimits(),
        streamIdleStop: Duration = .seconds(10), framesPerSecond: Double? = nil,
        videoFormat: VideoFormat = .mp4, h264: H264Settings = H264Settings()
    ) {
        self.stream = StreamSettings(
            devicePath: devicePath, width: width, height: height, framesPerSecond: framesPerSecond, frameTimeout: frameTimeout)
        self.videoFormat = videoFormat
        self.h264 = h264
        self.streamMode = streamMode
        self.photoMoment = photoMoment
        self.preRoll = preRoll
        self.ring = ring
        self.streamIdleStop = streamIdleStop
        self.outputDirectory = outputDirectory
        self.photoPattern = photoPattern
        self.videoPattern = videoPattern ?? videoFormat.defaultPattern
        self.jpegQuality = jpegQuality
        self.maximumVideoBytes = maximumVideoBytes
    }
}

/// Who asked for a file: goes into its name and into the hook environment.
public struct CaptureRequest: Sendable, Hashable {
    public var press: PressID
    /// The button's action; nil for a trigger message from another station.
    public var action: CaptureAction?
    /// The moment the file is named after (`{date}`, `{time}`), in seconds since 1970: the
    /// press's, converted from CLOCK_MONOTONIC once by whoever asks (docs/configuration.md#output).
    public var time: Double
    /// The trigger id shared by every file of one moment across a rig (`{trigger}`); nil for a
    /// plain local press.
    public var trigger: String?
    /// Digital zoom: a photo keeps the centre 1/zoom of each side (1: the whole frame).
    public var zoom: Double
    public init(
        press: PressID, action: CaptureAction?, time: Double, trigger: String? = nil, zoom: Double = 1
    ) {
        self.press = press
        self.action = action
        self.time = time
        self.trigger = trigger
        self.zoom = zoom
    }
}

/// Photos: one frame from the ring, written atomically as JPEG. Blocking; call it off the
/// input path (``ActionRunner`` does).
public enum Photo {
    /// Writes a frame from the ring as a photo: JPEG (MJPEG frames as the camera sent them),
    /// cropped losslessly around the centre for a digital zoom, with EXIF `DateTimeOriginal`
    /// and sub-seconds of the moment the frame was taken.
    public static func save(_ ring: RingFrame, _ settings: CaptureSettings, _ request: CaptureRequest) throws(RecordingError) -> PhotoResult
    {
        let image = try encode(ring, settings, zoom: request.zoom)
        let path = try write(image.jpeg, settings, request)
        return PhotoResult(
            path: path, width: image.width, height: image.height, bytes: image.jpeg.count, frameTime: ring.time,
            sequence: ring.frame.sequence, trigger: request.trigger)
    }

    /// Writes JPEG bytes under the photo pattern's name.
    package static func write(_ jpeg: [UInt8], _ settings: CaptureSettings, _ request: CaptureRequest) throws(RecordingError) -> String {
        let name = settings.photoPattern.name(
            time: request.time, press: request.press, action: request.action, kind: "photo", trigger: request.trigger)
        let file: AtomicFile
        do { file = try AtomicFile(directory: settings.outputDirectory, finalName: name) } catch { throw .file(error) }
        do {
            try file.write(jpeg)
            return try file.commit()
        } catch {
            file.abandon()
            throw .file(error)
        }
    }
}

extension Photo {
    /// A frame as the photo's JPEG bytes and size.
    package struct Encoded {
        package var jpeg: [UInt8]
        package var width: Int
        package var height: Int
    }

    /// A frame as JPEG (MJPEG frames as the camera sent them), cropped losslessly around the
    /// centre for a digital `zoom`, with EXIF `DateTimeOriginal` and sub-seconds of the
    /// moment the frame was taken.
    package static func encode(_ ring: RingFrame, _ settings: CaptureSettings, zoom: Double) throws(RecordingError) -> Encoded {
        var width = ring.frame.format.width, height = ring.frame.format.height
        do {
            var image = try JPEG.data(from: ring.frame, quality: settings.jpegQuality)
            if zoom > 1 {
                image = try JPEGCrop.centre(image, factor: zoom)
                if let size = JPEGCrop.size(of: image) { (width, height) = size }
            }
            let jpeg = try JPEG.withCaptureTime(image, wallSeconds: ring.time.wallSeconds)
            return Encoded(jpeg: jpeg, width: width, height: height)
        } catch { throw .jpeg(error) }
    }
}

/// A video being recorded on its own thread from the capture stream's ring, from
/// ``start(from:time:_:_:logger:)`` until ``stop()``: from the press's time (minus the
/// pre-roll), frames the ring still holds first, then each new one.
///
/// Frames go into an ``AVIWriter``; uncompressed frames are encoded first. The header's rate is the
/// rate frames really arrived at (the driver's nominal rate when within 5 % of it), so the
/// file plays for as long as the recording lasted.
public final class VideoRecording: Sendable {
    public let request: CaptureRequest
    private let stopRequested = Atomic<Bool>(false)
    /// The release's time (CLOCK_MONOTONIC µs, as an atomic holds it): the recording ends with
    /// the frame nearest it, so it lasts as long as the button was held. `Int64.min`: stop at once.
    private let stopTime = Atomic<Int64>(.min)
    private let started = OneShot<Result<StreamFormat, RecordingError>>()
    private let finished = OneShot<Result<VideoResult, RecordingError>>()

    private init(request: CaptureRequest) { self.request = request }

    /// Starts recording from `time`; returns once the first frame is written
    /// (or throws when the camera cannot stream).
    public static func start(
        from source: FrameSource, time: Timestamp, _ settings: CaptureSettings, _ request: CaptureRequest, logger: Logger
    ) async throws(RecordingError) -> VideoRecording {
        let recording = VideoRecording(request: request)
        startThread(name: "evc-video-\(request.press)") { recording.run(source, time, settings, logger: logger) }
        switch await recording.started.value() {
        case .success: return recording
        case .failure(let e): throw e
        }
    }

    /// Asks the recording thread to stop, waits for the file to be complete and named.
    /// `at`: the release's time: frames until then are still recorded (the
    /// recording may lag behind the camera); nil: stop with the frame being written.
    public func stop(at time: Timestamp? = nil) async -> Result<VideoResult, RecordingError> {
        stopTime.store(time?.microseconds ?? .min, ordering: .relaxed)
        stopRequested.store(true, ordering: .releasing)
        return await finished.value()
    }

    /// Whether the thread has ended by itself (size limit, camera error).
    public var hasEnded: Bool { finished.current != nil }

    private func run(_ source: FrameSource, _ time: Timestamp, _ settings: CaptureSettings, logger: Logger) {
        let name = settings.videoPattern.name(
            time: request.time, press: request.press, action: request.action, kind: "video", trigger: request.trigger)
        var file: VideoFile?
        var format: StreamFormat?
        var firstTimestamp: Timestamp?
        var lastTimestamp = Timestamp(microseconds: 0)
        var truncated = false
        var failure: RecordingError?
        var skipped = 0
        do {
            // Encoding runs here, on the recording's own thread: the ring keeps the frames
            // it has not taken yet, and counts those it fell behind on (`skipped`).
            let counts = try source.frames(from: time, timeout: settings.frameTimeout) { ring in
                let stopAt = stopRequested.load(ordering: .acquiring) ? stopTime.load(ordering: .relaxed) : nil
                // The last frame is the one nearest the release: not this one when the
                // previous frame was nearer.
                if let stopAt, stopAt != .min, firstTimestamp != nil, ring.time.microseconds >= stopAt,
                    stopAt - lastTimestamp.microseconds <= ring.time.microseconds - stopAt
                {
                    return false
                }
                if file == nil {
                    // The first frame (the press's) is taken at the thread's normal priority:
                    // a thread started under SCHED_IDLE on a busy CPU could wait until the ring
                    // no longer reaches back to the press. Encoding takes whole cores (libx264 at
                    // 1280×720: a third of one) and input must not wait behind it: from here on
                    // SCHED_IDLE (docs/video.md, "Off the input path"), and libx264's threads,
                    // which the encoder starts next, inherit it. A recording that falls behind
                    // skips frames and says so.
                    if lowerCurrentThreadPriority() != .idle {
                        logger.info("SCHED_IDLE refused for the recording thread: it runs at nice 19")
                    }
                    format = ring.frame.format
                    file = try VideoFile(first: ring, name: name, settings, zoom: request.zoom)
                    format!.width = file!.width
                    format!.height = file!.height
                }
                guard try file!.append(ring) else {
                    logger.info("video reached its size limit", metadata: ["file.name": "\(name)"])
                    truncated = true
                    return false
                }
                if firstTimestamp == nil {
                    firstTimestamp = ring.time
                    started.fulfil(.success(ring.frame.format))
                }
                lastTimestamp = ring.time
                guard let stopAt else { return true }
                if ring.time.microseconds >= stopAt { return false }  // `.min`: at once
                // A camera whose clock is not the events' never reaches the release's
                // time: it stops once the ring could no longer hold that moment.
                let limit = Int64(settings.ring.seconds * 1_000_000) + Int64(settings.frameTimeout / .microseconds(1))
                return monotonicNow().microseconds - stopAt <= limit
            }
            skipped = counts.skipped
        } catch let e as StreamingError {
            failure = .camera(e)
        } catch let e as RecordingError {
            failure = e
        } catch {
            failure = .camera(StreamingError(code: .failed, context: "\(error)"))
        }
        guard let file, let format, file.frameCount > 0 else {
            file?.abandon()
            let e = failure ?? .camera(StreamingError(code: .timedOut, context: "no frame recorded from \(settings.devicePath)"))
            started.fulfil(.failure(e))
            finished.fulfil(.failure(e))
            return
        }
        if let failure {
            // Keep what was recorded (a camera pulled mid-recording still leaves a playable file).
            logger.info("video stopped early", metadata: ["error": "\(failure)"])
            truncated = true
        }
        if skipped > 0 { logger.info("video fell behind the camera", metadata: ["video.skipped": "\(skipped)"]) }
        if file.undecodable > 0 { logger.info("damaged camera frames left out", metadata: ["video.undecodable": "\(file.undecodable)"]) }
        let fps = Self.frameRate(
            frames: file.frameCount + skipped, first: firstTimestamp ?? Timestamp(microseconds: 0), last: lastTimestamp,
            nominal: format.framesPerSecond)
        do {
            let (path, frames, cut) = try file.finish(framesPerSecond: fps)
            let first = firstTimestamp ?? Timestamp(microseconds: 0)
            finished.fulfil(
                .success(
                    VideoResult(
                        path: path, frames: frames, framesPerSecond: fps,
                        width: format.width, height: format.height, truncated: truncated || cut != nil, frameTime: firstTimestamp,
                        skipped: skipped,
                        undecodable: file.undecodable, format: settings.videoFormat,
                        encoder: file.encoder?.name ?? (settings.videoFormat == .mp4 ? "camera" : nil),
                        duration: Double(lastTimestamp.microseconds - first.microseconds) / 1_000_000 + 1 / fps, stoppedBy: failure ?? cut,
                        trigger: request.trigger))
            )
        } catch {
            file.abandon()
            finished.fulfil(.failure(error))
        }
    }

    /// The measured rate from driver timestamps, snapped to the nominal one when close.
    static func frameRate(frames: Int, first: Timestamp, last: Timestamp, nominal: Double?) -> Double {
        let span = Double(last.microseconds - first.microseconds) / 1_000_000
        guard frames >= 2, span > 0 else { return nominal ?? 30 }
        let measured = Double(frames - 1) / span
        if let nominal, abs(measured - nominal) / nominal < 0.05 { return nominal }
        return (measured * 1000).rounded() / 1000
    }
}
