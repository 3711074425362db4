/// The camera a system control is bound to, as the core sees it: an identity (a by-id path,
/// or "sim"), for the one-slider-per-camera rule. Driving the camera is the camera module's
/// job (docs/architecture.md#the-camera-backend-seam): the core decides values, the camera
/// module applies them.
public protocol BoundCamera: AnyObject, Sendable {
    var identity: String { get }
}

/// Why a camera did not take a control's value, as the controls report it: the camera
/// module's error code (`no such control`, `busy`, `device removed`, ...) and its message.
public struct ControlRefusal: Sendable, Hashable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
