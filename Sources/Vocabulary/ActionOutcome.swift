/// What an action did, for the daemon's JSON output and logs.
public enum ActionOutcome: Sendable {
    case photoSaved(PhotoResult, press: PressID)
    case videoStarted(press: PressID, trigger: String?)
    case videoSaved(VideoResult, press: PressID)
    /// A recording a crash interrupted, kept at start under its name.
    case videoRecovered(RecoveredVideo)
    case hookFinished(name: String, ChildOutcome, press: PressID)
    case soundStarted(file: String, press: PressID)
    case failed(ActionError, press: PressID?)
    /// Not run, and why (a replay runs no actions).
    case skipped(String, press: PressID, reason: String)
    /// A countdown second (`remaining` seconds to the shot at `shot`).
    case countdown(remaining: Int, shot: Timestamp, press: PressID)
    /// A countdown was cancelled (by a press) with `remaining` seconds to go.
    case countdownCancelled(remaining: Int, press: PressID)
    /// The shutter's moment: the photo is the frame nearest it.
    case shot(time: Timestamp, press: PressID)
    /// A burst's photos, in time order.
    case burstSaved([PhotoResult], press: PressID)
    /// A timelapse started, took or missed a shot, or stopped.
    case timelapse(TimelapseReport)
    /// A trigger message from the rig was taken (its command runs next): the moment a
    /// station heard the rig, which its photo's line comes only after the frame is saved.
    case triggerReceived(CaptureCommand, trigger: String, topic: String)
}

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

/// How a child process ended.
public struct ChildOutcome: Sendable, Hashable, CustomStringConvertible {
    /// The exit status when it exited.
    public var exitStatus: Int32?
    /// The signal that ended it.
    public var signal: Int32?
    /// It ran past its timeout and was killed (SIGTERM to its process group, SIGKILL 1 s later).
    public var timedOut: Bool
    /// Its combined stdout and stderr (at most 64 KiB kept).
    public var output: String

    public init(exitStatus: Int32? = nil, signal: Int32? = nil, timedOut: Bool, output: String) {
        self.exitStatus = exitStatus
        self.signal = signal
        self.timedOut = timedOut
        self.output = output
    }

    public var succeeded: Bool { exitStatus == 0 && !timedOut }

    public var description: String {
        if timedOut { return "killed after its timeout" }
        if let signal { return "ended by signal \(signal)" }
        return "exited with status \(exitStatus ?? -1)"
    }
}

/// A timelapse's progress, for its `timelapse` line.
public struct TimelapseReport: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, CaseIterable {
        case started, shot, missed, stopped
    }
    public var state: State
    /// The press that started it.
    public var press: PressID
    /// Shots taken and missed so far.
    public var count: Int
    public var missed: Int
    /// The next shot's time; nil once stopped.
    public var next: Timestamp?
    /// For `shot`: the photo.
    public var photo: PhotoResult?

    public init(state: State, press: PressID, count: Int, missed: Int, next: Timestamp? = nil, photo: PhotoResult? = nil) {
        self.state = state
        self.press = press
        self.count = count
        self.missed = missed
        self.next = next
        self.photo = photo
    }
}
