import Vocabulary

/// A change of the controls' interaction state (docs/behaviour.md#controls-interaction), as
/// reported to displays, LEDs and apps. The raw values are the `state` strings of the JSON
/// `controls` objects.
public enum ControlsStateChange: String, Sendable, Hashable, CaseIterable {
    /// The controls became active, showing the current control.
    case becameActive = "active"
    /// The first value change of a slide: the full-screen adjusting state begins.
    case willEnterAdjusting = "adjusting"
    /// The adjusting state ends (short idle, selection opened, or timeout).
    case willExitAdjusting = "adjusting-ended"
    /// The controls became inactive (idle timeout).
    case becameInactive = "inactive"
    /// A light double press opened the selection; `control` is the highlighted one.
    case selectionOpened = "selecting"
    /// A slide moved the selection's highlight to `control`.
    case selectionMoved = "selection"
    /// The selection closed; `control` is the current control afterwards.
    case selectionClosed = "selected"
}

/// A control value that changed.
public struct ControlValueChange: Sendable, Hashable {
    /// Who changed it.
    public enum Origin: String, Sendable, Hashable {
        /// A person, with the slider.
        case person
        /// The app, or another program using the camera (`controlValueChangedExternally`).
        case external
    }
    public var control: String
    public var value: Double
    /// For camera-bound controls, the raw V4L2 value the camera holds afterwards.
    public var raw: Int64?
    public var origin: Origin
    public var time: Timestamp

    public init(control: String, value: Double, raw: Int64? = nil, origin: Origin, time: Timestamp) {
        self.control = control
        self.value = value
        self.raw = raw
        self.origin = origin
        self.time = time
    }
}

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
