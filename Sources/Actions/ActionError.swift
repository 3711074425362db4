import Capture
import Vocabulary
import Recording

/// Why an action failed; the daemon reports each as an `error` event (none of them stops it).
public enum ActionError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The photo or the video could not be made (the camera, the encoder, the file).
    case recording(RecordingError)
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
        case .recording(let e): "\(e)"
        case .noCamera: "no camera configured or found for photo/video"
        case .queueFull(let kind, let press): "\(kind) queue full: request of press \(press) dropped"
        case .hook(let name, let problem): "hook \(name): \(problem)"
        case .notRecording(let press): "press \(press) is not recording"
        }
    }

    /// A short stable code for JSON `error` objects (`camera-busy`, `queue-full`, ...).
    public var code: String {
        switch self {
        case .recording(let e): e.code
        case .noCamera: "no-camera"
        case .queueFull: "queue-full"
        case .hook: "hook"
        case .notRecording: "not-recording"
        }
    }
}
