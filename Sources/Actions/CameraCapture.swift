#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import Synchronization
import V4L2
import Capture
import Evdev
import LinuxIO

/// Where and how photos and videos are taken.
public struct CaptureSettings: Sendable, Hashable {
    /// The V4L2 capture node (`/dev/video0`, `/dev/v4l/by-id/...`).
    public var devicePath: String
    /// The directory files are written to (must exist and be writable).
    public var outputDirectory: String
    public var photoPattern: FileNamePattern
    public var videoPattern: FileNamePattern
    /// Requested frame size; nil keeps the camera's current size.
    public var width: Int?
    public var height: Int?
    /// JPEG quality for YUYV cameras (MJPEG frames are stored as the camera sent them).
    public var jpegQuality: Int
    /// The longest wait for one frame before giving up with a `camera-timeout` error.
    public var frameTimeout: Duration
    /// Frames dropped after STREAMON before a photo (auto exposure settles on webcams).
    public var photoWarmupFrames: Int
    /// Size limit of one video file.
    public var maximumVideoBytes: Int

    public init(
        devicePath: String, outputDirectory: String,
        photoPattern: FileNamePattern = .defaultPhoto, videoPattern: FileNamePattern = .defaultVideo,
        width: Int? = nil, height: Int? = nil, jpegQuality: Int = 90, frameTimeout: Duration = .seconds(3),
        photoWarmupFrames: Int = 2, maximumVideoBytes: Int = 1 << 30
    ) {
        self.devicePath = devicePath
        self.outputDirectory = outputDirectory
        self.photoPattern = photoPattern
        self.videoPattern = videoPattern
        self.width = width
        self.height = height
        self.jpegQuality = jpegQuality
        self.frameTimeout = frameTimeout
        self.photoWarmupFrames = photoWarmupFrames
        self.maximumVideoBytes = maximumVideoBytes
    }
}

/// Who asked for a file: goes into its name and into the hook environment.
public struct CaptureRequest: Sendable, Hashable {
    public var press: UInt64
    public var action: String
    /// Seconds since 1970 when the request was made.
    public var time: Double
    /// The trigger id shared by every file of one moment across a rig (`{trigger}`); nil for a
    /// plain local press.
    public var trigger: String?
    /// Seconds since 1970 when the button went down (on whichever station it was pressed):
    /// the instant a frame ring picks its frame for. Not used to choose the frame yet.
    public var pressTime: Double?
    public init(press: UInt64, action: String, time: Double, trigger: String? = nil, pressTime: Double? = nil) {
        self.press = press
        self.action = action
        self.time = time
        self.trigger = trigger
        self.pressTime = pressTime
    }
}

/// A written photo.
public struct PhotoResult: Sendable, Hashable {
    public var path: String
    public var width: Int
    public var height: Int
    public var bytes: Int
    /// The request's trigger id.
    public var trigger: String? = nil
}

/// A written video.
public struct VideoResult: Sendable, Hashable {
    public var path: String
    public var frames: Int
    public var framesPerSecond: Double
    public var width: Int
    public var height: Int
    /// The recording stopped early at the size limit or after a camera error.
    public var truncated: Bool
    /// The request's trigger id.
    public var trigger: String? = nil
}

/// Photos: one frame, written atomically as JPEG. Blocking; call it off the input path
/// (``ActionRunner`` does).
public enum Photo {
    public static func take(_ settings: CaptureSettings, _ request: CaptureRequest) throws(ActionError) -> PhotoResult {
        let stream: VideoCaptureStream
        do {
            stream = try VideoCaptureStream(path: settings.devicePath, width: settings.width, height: settings.height)
        } catch { throw .camera(error) }
        defer { stream.stop() }
        var frame: VideoFrame
        do {
            frame = try stream.nextFrame(timeout: settings.frameTimeout)
            for _ in 0..<max(0, settings.photoWarmupFrames) {
                frame = try stream.nextFrame(timeout: settings.frameTimeout)
            }
        } catch { throw .camera(error) }
        stream.stop()
        let jpeg: [UInt8]
        do { jpeg = try JPEG.data(from: frame, quality: settings.jpegQuality) } catch { throw .jpeg(error) }
        let path = try write(jpeg, settings, request)
        return PhotoResult(path: path, width: frame.format.width, height: frame.format.height, bytes: jpeg.count, trigger: request.trigger)
    }

    /// Writes JPEG bytes under the photo pattern's name (used for frames taken from a recording too).
    static func write(_ jpeg: [UInt8], _ settings: CaptureSettings, _ request: CaptureRequest) throws(ActionError) -> String {
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

/// A video being recorded on its own thread, from ``start(_:_:logger:)`` until ``stop()``.
///
/// Frames go straight from the camera into an ``AVIWriter``; YUYV frames are encoded first.
/// The header's rate is the rate frames really arrived at (the driver's nominal rate when
/// within 5 % of it), so the file plays for as long as the recording lasted.
public final class VideoRecording: Sendable {
    public let request: CaptureRequest
    private let stopRequested = Atomic<Bool>(false)
    private let latest = Mutex<[UInt8]?>(nil)
    private let started = OneShot<Result<StreamFormat, ActionError>>()
    private let finished = OneShot<Result<VideoResult, ActionError>>()

    private init(request: CaptureRequest) { self.request = request }

    /// Opens the camera and starts recording; returns once the first frame is written (or
    /// throws when the camera cannot stream).
    public static func start(
        _ settings: CaptureSettings, _ request: CaptureRequest, logger: Logger
    ) async throws(ActionError) -> VideoRecording {
        let recording = VideoRecording(request: request)
        startThread(name: "evc-video-\(request.press)") { recording.run(settings, logger: logger) }
        switch await recording.started.value() {
        case .success: return recording
        case .failure(let e): throw e
        }
    }

    /// Asks the recording thread to stop, waits for the file to be complete and named.
    public func stop() async -> Result<VideoResult, ActionError> {
        stopRequested.store(true, ordering: .releasing)
        return await finished.value()
    }

    /// Whether the thread has ended by itself (size limit, camera error).
    public var hasEnded: Bool { finished.current != nil }

    /// The most recent frame as JPEG (a photo taken while recording uses it).
    public func latestJPEG() -> [UInt8]? { latest.withLock { $0 } }

    private func run(_ settings: CaptureSettings, logger: Logger) {
        let stream: VideoCaptureStream
        do {
            stream = try VideoCaptureStream(path: settings.devicePath, width: settings.width, height: settings.height)
        } catch {
            started.fulfil(.failure(.camera(error)))
            finished.fulfil(.failure(.camera(error)))
            return
        }
        defer { stream.stop() }
        let format = stream.format
        let name = settings.videoPattern.name(
            time: request.time, press: request.press, action: request.action, kind: "video", trigger: request.trigger)
        let writer: AVIWriter
        do {
            writer = try AVIWriter(
                file: AtomicFile(directory: settings.outputDirectory, finalName: name),
                width: format.width, height: format.height, maximumBytes: settings.maximumVideoBytes)
        } catch {
            started.fulfil(.failure(.file(error)))
            finished.fulfil(.failure(.file(error)))
            return
        }
        var firstTimestamp: Int64?
        var lastTimestamp: Int64 = 0
        var truncated = false
        var failure: ActionError?
        while !stopRequested.load(ordering: .acquiring) {
            do {
                let frame = try stream.nextFrame(timeout: settings.frameTimeout)
                let jpeg = try JPEG.data(from: frame, quality: settings.jpegQuality)
                guard try writer.append(jpeg: jpeg) else {
                    logger.info("video reached its size limit", metadata: ["file.name": "\(name)"])
                    truncated = true
                    break
                }
                latest.withLock { $0 = jpeg }
                if firstTimestamp == nil {
                    firstTimestamp = frame.timestampMicroseconds
                    started.fulfil(.success(format))
                }
                lastTimestamp = frame.timestampMicroseconds
            } catch let e as StreamingError {
                failure = .camera(e)
            } catch let e as JPEGError {
                failure = .jpeg(e)
            } catch let e as FileWriteError {
                failure = .file(e)
            } catch {
                failure = .camera(StreamingError(code: .system, context: "\(error)"))
            }
            if failure != nil { break }
        }
        stream.stop()
        if writer.frameCount == 0 {
            writer.abandon()
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
        let fps = Self.frameRate(
            frames: writer.frameCount, first: firstTimestamp ?? 0, last: lastTimestamp, nominal: format.framesPerSecond)
        do {
            let path = try writer.finish(framesPerSecond: fps)
            finished.fulfil(.success(VideoResult(
                path: path, frames: writer.frameCount, framesPerSecond: fps,
                width: format.width, height: format.height, truncated: truncated, trigger: request.trigger)))
        } catch {
            writer.abandon()
            finished.fulfil(.failure(.file(error)))
        }
    }

    /// The measured rate from driver timestamps, snapped to the nominal one when close.
    static func frameRate(frames: Int, first: Int64, last: Int64, nominal: Double?) -> Double {
        let span = Double(last - first) / 1_000_000
        guard frames >= 2, span > 0 else { return nominal ?? 30 }
        let measured = Double(frames - 1) / span
        if let nominal, abs(measured - nominal) / nominal < 0.05 { return nominal }
        return (measured * 1000).rounded() / 1000
    }
}
