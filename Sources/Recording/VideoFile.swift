#if canImport(Glibc)
import Glibc
#endif
import Movie
import Frames

/// One recording's file: MJPEG frames in AVI, or H.264 in fragmented MP4. Made from the
/// recording's first frame (its size and format), written under a recoverable temporary
/// name (``AtomicFile``) and named when finished. One instance belongs to one thread.
final class VideoFile {
    private enum Writer {
        case avi(AVIWriter)
        case mp4(FragmentedMP4Writer, AtomicFile)
    }
    private let writer: Writer
    private let settings: CaptureSettings
    private let zoom: Double
    let width: Int
    let height: Int
    /// The encoder, for MP4 (nil when the camera's H.264 is muxed as it is).
    let encoder: EncoderChoice?

    init(first: RingFrame, name: String, _ settings: CaptureSettings, zoom: Double) throws(RecordingError) {
        self.settings = settings
        self.zoom = zoom
        let file: AtomicFile
        do { file = try AtomicFile(directory: settings.outputDirectory, finalName: name, recoverable: true) } catch { throw .file(error) }
        let format = first.frame.format
        switch settings.videoFormat {
        case .avi:
            let jpeg = try Self.jpeg(first, settings, zoom)
            let size = JPEGCrop.size(of: jpeg) ?? (format.width, format.height)
            (width, height, encoder) = (size.width, size.height, nil)
            do {
                writer = .avi(
                    try AVIWriter(
                        file: file, width: size.width, height: size.height, maximumBytes: settings.maximumVideoBytes,
                        framesPerSecond: format.framesPerSecond ?? 30))
            } catch { throw .file(error) }
        case .mp4:
            // The camera's own H.264 is muxed as it is: no encoder is needed, nor looked for.
            var choice: EncoderChoice?
            if format.pixelFormat != .h264 {
                switch EncoderChoice.current(settings.h264) {
                case .success(let c): choice = c
                case .failure(let e): throw .video(e)
                }
            } else if zoom > 1 {
                throw .video(
                    MovieError(
                        code: .unsupportedFormat,
                        context:
                            "a digital zoom cannot crop the camera's H.264 (it is muxed as it is, not decoded): zoom out, or set [camera] pixel-format to a picture format"
                    ))
            }
            let crop = zoom > 1 ? CropRect(width: format.width, height: format.height, zoom: zoom) : nil
            do {
                let mp4 = try FragmentedMP4Writer(
                    fd: file.fd, path: file.temporaryPath, format: format, crop: crop, settings: settings.h264, encoder: choice,
                    creationTime: first.time.wallSeconds)
                (width, height, encoder) = (mp4.width, mp4.height, mp4.encoder)
                writer = .mp4(mp4, file)
            } catch { throw RecordingError.movie(error) }
        }
    }

    /// Camera frames left out of an MP4 because they could not be decoded.
    var undecodable: Int {
        if case .mp4(let w, _) = writer { return w.undecodable }
        return 0
    }

    /// Frames in the file.
    var frameCount: Int {
        switch writer {
        case .avi(let w): w.frameCount
        case .mp4(let w, _): w.frames
        }
    }

    /// Appends a frame; false at the size limit (nothing written).
    func append(_ ring: RingFrame) throws(RecordingError) -> Bool {
        switch writer {
        case .avi(let w):
            let jpeg = try Self.jpeg(ring, settings, zoom)
            do { return try w.append(jpeg: jpeg) } catch { throw .file(error) }
        case .mp4(let w, _):
            guard w.bytesOnDisk < Int64(settings.maximumVideoBytes) else { return false }
            do { try w.append(ring.frame.bytes, at: ring.time.microseconds) } catch { throw RecordingError.movie(error) }
            return true
        }
    }

    /// Finishes and names the file; returns its path and the frames it holds. An MP4 whose
    /// last write failed keeps its whole fragments: `failure` says why it was cut.
    func finish(framesPerSecond: Double) throws(RecordingError) -> (path: String, frames: Int, failure: RecordingError?) {
        switch writer {
        case .avi(let w):
            do { return (try w.finish(framesPerSecond: framesPerSecond), w.frameCount, nil) } catch { throw .file(error) }
        case .mp4(let w, let file):
            var failure: RecordingError?
            do { try w.finish() } catch { failure = RecordingError.movie(error) }
            guard w.framesOnDisk > 0 else {
                file.abandon()
                throw failure ?? .file(FileWriteError(errno: 0, context: "no frame reached \(file.temporaryPath)"))
            }
            do { return (try file.commit(), w.framesOnDisk, failure) } catch { throw .file(error) }
        }
    }

    func abandon() {
        switch writer {
        case .avi(let w): w.abandon()
        case .mp4(_, let file): file.abandon()
        }
    }

    /// An MJPEG frame for the AVI: the camera's JPEG, or an uncompressed frame encoded; cropped losslessly
    /// around the centre for a digital zoom.
    private static func jpeg(_ ring: RingFrame, _ settings: CaptureSettings, _ zoom: Double) throws(RecordingError) -> [UInt8] {
        do {
            var jpeg = try JPEG.data(from: ring.frame, quality: settings.jpegQuality)
            if zoom > 1 { jpeg = try JPEGCrop.centre(jpeg, factor: zoom) }
            return jpeg
        } catch { throw .jpeg(error) }
    }
}

extension VideoFormat {
    /// What a recording in this format will be on this system: for MP4, which encoder and
    /// why (none when `stream` asks the camera for H.264) (`video: H.264 in fragmented MP4, encoder libx264 (software: no V4L2 hardware
    /// H.264 encoder on this system)`).
    public func report(_ h264: H264Settings, stream: StreamSettings? = nil) -> String {
        if self == .mp4, stream?.wantsH264 == true {
            return "video: H.264 in fragmented MP4, the camera's H.264 muxed as it is (no encoder: [camera] pixel-format = \"h264\")"
        }
        switch self {
        case .avi:
            return "video: MJPEG in AVI (the camera's JPEG frames, or uncompressed frames encoded as JPEG)"
        case .mp4:
            switch EncoderChoice.current(h264) {
            case .success(let choice): return "video: H.264 in fragmented MP4, encoder \(choice)"
            case .failure(let e):
                return "video: H.264 in fragmented MP4, but \(e.context): recordings will fail (video-format = \"avi\" needs no encoder)"
            }
        }
    }
}
