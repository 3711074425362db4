/// What the pipeline reports, as values. Turning them into JSON lines or readable text is
/// the output layer's job; the daemon adds what only it knows (camera errors, actions).
public enum PipelineEvent: Sendable {
    /// A press's phase (docs/behaviour.md#press-lifecycle).
    case capture(CaptureEvent)
    /// A device joined or left.
    case device(DeviceChange)
    /// The capture session started, stopped, paused, or got its camera.
    case session(SessionChange)
    /// A control's value changed (a slide, or another program).
    case control(ControlReport)
    /// The controls' interaction state changed; `control` is the control shown or highlighted.
    case controlsState(ControlsStateChange, control: String?, time: Timestamp)
    /// The controls the session holds, once, with the first device; `current` is the one a
    /// slide moves.
    case controlsConfigured(controls: [String], current: String?, time: Timestamp)
    /// Something failed: a camera refused a value, a device could not be read.
    case error(ErrorReport)

    /// When it happened, on the pipeline's clock (CLOCK_MONOTONIC live, the recording's in a replay).
    public var time: Timestamp {
        switch self {
        case .capture(let e): e.time
        case .device(let d): d.time
        case .session(let s): s.time
        case .control(let c): c.change.time
        case .controlsState(_, _, let t), .controlsConfigured(_, _, let t): t
        case .error(let e): e.time
        }
    }
}

/// A device added to or removed from the pipeline.
public struct DeviceChange: Sendable {
    public enum Kind: String, Sendable { case added, removed }
    public var kind: Kind
    public var device: CaptureDevice
    /// The device's roles; on `added`.
    public var profile: DeviceProfile?
    public var time: Timestamp

    public init(kind: Kind, device: CaptureDevice, profile: DeviceProfile? = nil, time: Timestamp) {
        self.kind = kind
        self.device = device
        self.profile = profile
        self.time = time
    }
}

/// A change of the capture session (docs/behaviour.md#the-capture-session).
public struct SessionChange: Sendable {
    public enum State: String, Sendable {
        case started, stopped, paused
        /// A camera was found after the session started.
        case cameraAdded = "camera-added"
    }
    public var state: State
    /// Why it stopped (`camera-removed`, `shutdown`, …), a code.
    public var reason: String?
    /// The camera's identity, when one is involved.
    public var camera: String?
    /// The camera's device node.
    public var cameraNode: String?
    public var time: Timestamp

    public init(_ state: State, reason: String? = nil, camera: String? = nil, cameraNode: String? = nil, time: Timestamp) {
        self.state = state
        self.reason = reason
        self.camera = camera
        self.cameraNode = cameraNode
        self.time = time
    }
}

/// A control value change with what a display needs to show it.
public struct ControlReport: Sendable {
    public var change: ControlValueChange
    /// The control with the new value (title, scale, format); nil when it is no longer held.
    public var control: Control?

    public init(change: ControlValueChange, control: Control?) {
        self.change = change
        self.control = control
    }
}

/// A failure reported in the event stream.
public struct ErrorReport: Sendable {
    public var message: String
    /// A stable code for programs (`camera-busy`, `disk-full`, …).
    public var code: String?
    /// The press it belongs to.
    public var press: PressID?
    public var time: Timestamp

    public init(_ message: String, code: String? = nil, press: PressID? = nil, time: Timestamp) {
        self.message = message
        self.code = code
        self.press = press
        self.time = time
    }
}
