import Vocabulary

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

    var captureEvent: CaptureEvent? {
        if case .capture(let e) = self { return e }
        return nil
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

/// The seam for the controls (slider and light-press inputs → controls → camera). The
/// pipeline drives it on its own clock: deadlines of both fire in time order, and it sees
/// every frame that carries slider or light-press inputs while the session runs.
public protocol ControlsStage: AnyObject {
    /// A device joins (before any frame). `index` identifies it in later calls.
    func deviceAdded(_ profile: DeviceProfile, index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void)
    /// A whole frame (events up to `SYN_REPORT`) of a device that has slider or light-press inputs.
    func handle(frame: [InputEvent], device index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void)
    /// A frame of a device that moves nothing now (the session is not running): positions
    /// (counter and absolute axes) are followed so the next movement starts from them.
    func observe(frame: [InputEvent], device index: Int)
    /// Events were lost on a device (`SYN_DROPPED`).
    func eventsLost(device index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void)
    /// The earliest time `advance(to:_:)` has something to do.
    var nextDeadline: Timestamp? { get }
    func advance(to now: Timestamp, _ emit: (PipelineEvent) -> Void)
    /// The device went away.
    func deviceRemoved(index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void)
}

/// When the capture session runs (docs/behaviour.md#the-capture-session).
public struct SessionPolicy: Sendable, Hashable {
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// From start to stop: a capture station.
        case always
        /// From a press of `launchButton` until `idleStop` passes without input: like a
        /// phone's camera button opening the camera (power, privacy).
        case launch
    }
    public var mode: Mode
    /// The key that starts a launched session (its press does not also capture).
    public var launchButton: EventCode
    /// A launched session stops after this long without a frame the daemon takes (and no
    /// press in flight): it takes no event without a role (``delivery(for:)``), so a mouse
    /// moved or a keyboard typed on keeps nothing running.
    public var idleStop: Duration

    public init(mode: Mode = .always, launchButton: EventCode = .camera, idleStop: Duration = .seconds(60)) {
        self.mode = mode
        self.launchButton = launchButton
        self.idleStop = idleStop
    }

    /// Which of `profile`'s events the daemon needs (the kernel delivers it nothing else,
    /// ``EvdevDevice/deliver(_:)``): no wake-up for the rest, and none of those keystrokes
    /// in the daemon's hands.
    /// - Nothing from a device whose every code is ignored (a mouse, a touchpad, a lid
    ///   switch, a keyboard without media keys, a device set to `kind = "ignore"`).
    /// - Of a device shared with the desktop (a keyboard with volume keys), only the keys
    ///   with a role: typing wakes nothing.
    /// - Everything from a device dedicated to the rig: its grab waits until none of its
    ///   keys is down, so every key's state counts.
    /// The launch button of a launched session is always heard.
    public func delivery(for profile: DeviceProfile) -> EventDelivery {
        let withRole = profile.roles.keys.filter { profile.role(of: $0) != .ignore }
        let launches = mode == .launch && profile.description.codes.contains(launchButton)
        if withRole.isEmpty && !launches { return .none }
        if profile.isDedicated { return .all }
        return .keys(Set(withRole.filter { $0.type == .key } + (launches ? [launchButton] : [])))
    }
}
