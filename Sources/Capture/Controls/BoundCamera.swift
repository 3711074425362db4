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
