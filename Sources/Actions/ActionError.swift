#if canImport(Glibc)
import Glibc
#endif
import V4L2
import Capture
import LinuxIO
import Movie
import Media

/// Why an action failed; the daemon reports each as an `error` event (none of them stops it).
public enum ActionError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The camera failed: busy (EBUSY), gone (ENODEV), no frame within the timeout, ...
    case camera(StreamingError)
    /// A frame could not be encoded.
    case jpeg(JPEGError)
    /// The output file could not be written.
    case file(FileWriteError)
    /// A video could not be encoded (no H.264 encoder, the encoder refused the frames).
    case video(MovieError)
    /// Photo or video requested, but no camera is configured or found.
    case noCamera
    /// A queue was full, so the request was dropped (the input path never waits).
    case queueFull(kind: String, press: PressID)
    /// A hook could not be started, was killed after its timeout, or exited non-zero.
    case hook(name: String, problem: String)
    /// A video stop for a press that is not recording (its start failed or was dropped).
    case notRecording(press: PressID)

    public var description: String {
        switch self {
        case .camera(let e): "camera: \(e)"
        case .jpeg(let e): "\(e)"
        case .file(let e): "output file: \(e)"
        case .video(let e): "video: \(e)"
        case .noCamera: "no camera configured or found for photo/video"
        case .queueFull(let kind, let press): "\(kind) queue full: request of press \(press) dropped"
        case .hook(let name, let problem): "hook \(name): \(problem)"
        case .notRecording(let press): "press \(press) is not recording"
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
        case .noCamera: "no-camera"
        case .queueFull: "queue-full"
        case .hook: "hook"
        case .notRecording: "not-recording"
        }
    }
}
