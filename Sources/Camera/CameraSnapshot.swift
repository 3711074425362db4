/// A camera's controls as read at one moment, behind ``CameraBackend``: it answers from that
/// list and never asks the camera. Code that follows a camera (``ControlsSession/cameraChanged(_:at:)``)
/// runs on it where the camera must not be waited for; the read itself happened on a thread
/// that may wait.
final class CameraSnapshot: CameraBackend {
    public let identity: String
    private let list: [CameraControlInfo]

    /// `identity` is the camera's, so that controls bound to it follow the snapshot.
    public init(identity: String, controls: [CameraControlInfo]) {
        self.identity = identity
        self.list = controls
    }

    public func controls() -> [CameraControlInfo] { list }

    /// A snapshot cannot be set: it is what was read, not the camera.
    public func set(_ id: CameraControlID, to value: Int64) throws(CameraError) -> Int64 {
        throw CameraError(code: .failed, device: identity, control: name(id), context: "a snapshot of the camera's controls cannot be set")
    }

    public func value(of id: CameraControlID) throws(CameraError) -> Int64 {
        guard let c = list.first(where: { $0.id == id }) else {
            throw CameraError(code: .noSuchControl, device: identity, control: name(id), context: "not in the snapshot")
        }
        return c.value
    }

    private func name(_ id: CameraControlID) -> String {
        list.first { $0.id == id }?.name ?? id.description
    }
}
