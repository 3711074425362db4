import Vocabulary
import LiveView

extension DaemonState {
    /// A request from the live view, taken as a device's input: the page is a virtual
    /// device named `http` (node `http`) whose camera key is a primary button, whose focus
    /// key is the light press and whose dial is the slider. Its capture and control lines
    /// say so, and photos, hooks and the controls follow exactly as for a real button.
    func accept(_ input: LiveViewInput) {
        defer { scheduleDeadline() }
        let now = monotonicNow()
        let index = liveViewDevice ?? pipeline.addDevice(Self.liveViewProfile, at: now) { emit($0) }
        liveViewDevice = index
        let frames: [[InputEvent]] =
            switch input {
            case .capture: [[InputEvent(time: now, .camera, 1)], [InputEvent(time: now, .camera, 0)]]
            case .nextControl: [[InputEvent(time: now, .cameraFocus, 1)], [InputEvent(time: now, .cameraFocus, 0)]]
            case .step(let n): [[InputEvent(time: now, .relDial, Int32(n))]]
            }
        for frame in frames { pipeline.handle(frame: frame, device: index, at: now) { emit($0) } }
    }

    static let liveViewProfile: DeviceProfile = {
        let reason = "the live view's page"
        return DeviceProfile(
            description: DeviceDescription(name: "http", bus: .virtual, codes: [.synReport, .camera, .cameraFocus, .relDial]),
            node: "http",
            roles: [
                .camera: RoleAssignment(role: .primary, source: .config, reason: reason),
                .cameraFocus: RoleAssignment(role: .lightPress, source: .config, reason: reason),
                .relDial: RoleAssignment(role: .slider, source: .config, reason: reason),
            ],
            kind: .other, kindReason: reason)
    }()
}
