import Vocabulary

extension PipelineEvent {
    var captureEvent: CaptureEvent? {
        if case .capture(let e) = self { return e }
        return nil
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
