import Capture
import Vocabulary
import Udev

/// The controls stage of the pipeline: a `ControlsSession` with the system controls (zoom,
/// then exposure bias) bound to a camera — a `V4L2Camera` for `evcapture run` and for
/// `evcapture replay --camera DEV`, the `SimCamera` for `replay --camera sim` — driven
/// through the pipeline's `ControlsStage` seam on the pipeline's clock.
///
/// Reports (docs/json-lines.md#control): a `control` event for every value change and a `controlsState` event
/// for every interaction state change; once, with the first device, `controlsConfigured`
/// listing the controls. The current control starts as `rememberedControl`; the caller
/// persists changes through `onCurrentControl`.
public final class CameraControlsStage: ControlsStage {
    public let camera: any CameraBackend
    public let session: ControlsSession
    /// Called when the current control changes (the daemon persists it in the state file).
    public var onCurrentControl: ((String) -> Void)?
    private var profiles: [Int: DeviceProfile] = [:]
    private var announced = false
    /// The controls' events of one frame, reused: a knob detent allocates nothing.
    private var scratch: [ControlsEvent] = []

    /// `controls`: the system controls to show, in order (`zoom`, `exposure-bias`); a control
    /// the camera cannot drive (no zoom control, say) is left out.
    public init(
        camera: any CameraBackend, configuration: ControlsConfiguration = .init(),
        rememberedControl: String? = nil, controls: [String] = ["zoom", "exposure-bias"]
    ) {
        self.camera = camera
        scratch.reserveCapacity(16)
        session = ControlsSession(configuration: configuration, rememberedControl: rememberedControl)
        let start = Timestamp(microseconds: 0)
        session.beginConfiguration()
        for name in controls {
            let control: Control?
            switch name {
            // No zoom_absolute (most cheap webcams): the knob still zooms, digitally, on the photos.
            case "zoom": control = (try? Control.systemZoomSlider(camera: camera)) ?? Control.digitalZoomSlider()
            case "exposure-bias": control = try? Control.systemExposureBiasSlider(camera: camera)
            default: control = nil
            }
            if let control, session.canAddControl(control) { _ = try? session.addControl(control, at: start) }
        }
        _ = session.commitConfiguration(at: start)
    }

    public func deviceAdded(_ profile: DeviceProfile, index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        profiles[index] = profile
        session.deviceAdded(profile)
        guard !announced else { return }
        announced = true
        emit(.controlsConfigured(controls: session.controls.map(\.name), current: session.currentControl?.name, time: now))
    }

    public func handle(frame: [InputEvent], device index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        guard let node = profiles[index]?.node else { return }
        scratch.removeAll(keepingCapacity: true)
        session.handle(frame: frame, from: node, at: now, into: &scratch)
        report(scratch, emit)
    }

    public func observe(frame: [InputEvent], device index: Int) {
        if let node = profiles[index]?.node { session.observe(frame: frame, from: node) }
    }

    public func eventsLost(device index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        if let p = profiles[index] { session.eventsLost(node: p.node, profile: p) }
    }

    public var nextDeadline: Timestamp? { session.nextDeadline }

    /// Runs every timeout due at or before `now`, each at its own deadline.
    public func advance(to now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        while let deadline = session.nextDeadline, deadline <= now {
            report(session.advance(to: deadline), emit)
        }
    }

    public func deviceRemoved(index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        if let p = profiles.removeValue(forKey: index) { session.deviceRemoved(node: p.node) }
    }

    /// The camera's values or ranges changed elsewhere (a V4L2 control event, a replug):
    /// the controls follow, so the next slide starts from the camera's value.
    public func cameraChanged(at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        report(session.cameraChanged(camera, at: now), emit)
    }

    /// As ``cameraChanged(at:_:)``, from `controls` read elsewhere (the camera's writer
    /// thread): nothing here asks the camera, so a camera that stops answering cannot hold
    /// the caller.
    public func cameraChanged(_ controls: [CameraControlInfo], at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        report(session.cameraChanged(CameraSnapshot(identity: camera.identity, controls: controls), at: now), emit)
    }

    /// The camera went away (false) or came back (true): its controls are disabled (listed,
    /// not changeable) or enabled again.
    public func cameraAvailable(_ available: Bool, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
        for control in session.controls where control.binding.camera != nil {
            report(session.setEnabled(available, named: control.name, at: now), emit)
        }
    }

    /// The controls' events as pipeline events.
    func report(_ events: [ControlsEvent], _ emit: (PipelineEvent) -> Void) {
        for event in events {
            switch event {
            case .value(let v):
                var control = session.core.control(named: v.control)
                control?.value = v.value
                emit(.control(ControlReport(change: v, control: control)))
            case .state(let change, let control, let time):
                emit(.controlsState(change, control: control, time: time))
            case .error(let error, let control, let time):
                emit(.error(ErrorReport("control \(control): \(error)", time: time)))
            case .currentControl(let name):
                onCurrentControl?(name)
            case .controlsChanged:
                // The control set is announced once (`controlsConfigured`); the current
                // control is what a daemon persists.
                break
            }
        }
    }
}
