/// What a trigger from outside the station (an MQTT trigger message) asks for, whatever the
/// buttons' bindings say.
public enum CaptureCommand: String, Sendable, Hashable, CaseIterable {
    case photo
    case videoStart = "video-start"
    case videoStop = "video-stop"
}
