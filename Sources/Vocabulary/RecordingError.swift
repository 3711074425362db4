/// Why a photo or a video could not be made; an action that fails with one reports it as an
/// `error` event, under the code below.
public enum RecordingError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The camera failed (the stream's `StreamingError`): busy (EBUSY), gone (ENODEV), no frame
    /// within the timeout, ...
    case camera(SystemError)
    /// A frame could not be encoded.
    case jpeg(JPEGError)
    /// The output file could not be written (a `FileWriteError`).
    case file(SystemError)
    /// A video could not be encoded (a `MovieError`: no H.264 encoder, the encoder refused the frames).
    case video(SystemError)

    public var description: String {
        switch self {
        case .camera(let e): "camera: \(e)"
        case .jpeg(let e): "\(e)"
        case .file(let e): "output file: \(e)"
        case .video(let e): "video: \(e)"
        }
    }

    /// A short stable code for JSON `error` objects (`camera-busy`, `camera-removed`, ...).
    public var code: String {
        switch self {
        case .camera(let e):
            switch e.code {
            case .busy: "camera-busy"
            case .deviceRemoved: "camera-removed"
            case .timedOut: "camera-timeout"
            case .permissionDenied: "camera-permission"
            case .noBandwidth: "camera-bandwidth"
            case .noUsableFormat: "camera-format"
            case .frameRateNotAvailable: "camera-fps"
            default: "camera"
            }
        case .jpeg: "jpeg"
        // Nothing partial is left (AtomicFile); a video keeps what was recorded.
        case .file(let e) where e.code == .noSpace: "disk-full"
        case .file: "file"
        case .video: "video-encoder"
        }
    }
}

/// A JPEG encoding or decoding failure reported by libjpeg.
public struct JPEGError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "JPEG: \(message)" }
}
