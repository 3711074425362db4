import Capture
import Evdev

/// The controls part of `evcapture replay --camera sim`: a `ControlsSession` with the default
/// controls bound to a `SimCamera`, fed the recordings' frames on their own clock.
///
/// Timeouts are run at their own deadlines (not at the next frame's time), so the reported
/// times are what a live daemon would report; `finish()` runs the ones left at the end.
public final class SimCameraReplay {
    public let camera: SimCamera
    public let session: ControlsSession

    public init(camera: SimCamera = SimCamera(), configuration: ControlsConfiguration = .init(), rememberedControl: String? = nil) {
        self.camera = camera
        session = ControlsSession(configuration: configuration, rememberedControl: rememberedControl)
        _ = session.addDefaultControls(camera: camera, at: Timestamp(microseconds: 0))
    }

    /// A recording's device: its slider and light-press codes take part.
    public func deviceAdded(_ profile: DeviceProfile) { session.deviceAdded(profile) }

    /// One frame of the device at `node`, after the timeouts due before it.
    public func handle(frame: [InputEvent], from node: String) -> [ControlsEvent] {
        guard let time = frame.last?.time else { return [] }
        return advance(to: time) + session.handle(frame: frame, from: node)
    }

    /// Runs every timeout due at or before `now`, each at its deadline.
    public func advance(to now: Timestamp) -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        while let deadline = session.nextDeadline, deadline <= now {
            out += session.advance(to: deadline)
        }
        return out
    }

    /// Runs the timeouts left after the last frame (the controls end inactive).
    public func finish() -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        while let deadline = session.nextDeadline { out += session.advance(to: deadline) }
        return out
    }
}
