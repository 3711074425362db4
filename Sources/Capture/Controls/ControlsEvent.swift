import Vocabulary

/// What the controls report.
public enum ControlsEvent: Sendable, Hashable {
    /// The interaction state changed; `control` is the control shown or highlighted.
    case state(ControlsStateChange, control: String?, time: Timestamp)
    /// A value changed.
    case value(ControlValueChange)
    /// The current control (the one a slide moves) is now this one; persist it so it is the
    /// current control after a restart.
    case currentControl(String)
    /// The set of controls changed (a committed configuration, a control enabled or disabled,
    /// a camera range refreshed); names in order.
    case controlsChanged([String])
    /// A camera refused a value.
    case error(ControlRefusal, control: String, time: Timestamp)
}

/// Why a configuration change was refused.
public enum ControlsConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The session already holds `maxControlsCount` controls.
    case full(max: Int)
    /// A second system zoom / exposure-bias slider bound to the same camera.
    case duplicateSystemControl(kind: String, camera: String)
    /// Another control already has this name.
    case duplicateName(String)
    /// No control has this name.
    case noSuchControl(String)

    public var description: String {
        switch self {
        case .full(let max): "cannot add a control: the session already holds \(max) controls"
        case .duplicateSystemControl(let kind, let camera): "camera \(camera) already has a system \(kind) slider"
        case .duplicateName(let n): "a control named \"\(n)\" already exists"
        case .noSuchControl(let n): "no control named \"\(n)\""
        }
    }
}
