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
