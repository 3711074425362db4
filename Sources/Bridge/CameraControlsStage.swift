import Capture
import Evdev

/// The controls stage of the pipeline: a `ControlsSession` with the default controls (zoom,
/// then exposure bias) bound to a camera — the `SimCamera` for `evcapture replay --camera
/// sim`, the V4L2 camera for `evcapture run` — driven through the pipeline's
/// `ReplayControlsStage` seam on the pipeline's clock.
///
/// Reports (spec §6): `control` objects (`control`, `value`, `raw`) for every value change and
/// `controls` objects (`state`, `control`) for every interaction state change; once, with the
/// first device, a `controls` object with state `configured` listing the controls. A replay
/// never reads or writes the state file: the current control starts as `rememberedControl`.
public final class CameraControlsStage: ReplayControlsStage {
    public let camera: any CameraBackend
    public let session: ControlsSession
    /// Called when the current control changes (the daemon persists it in the state file).
    public var onCurrentControl: ((String) -> Void)?
    private var profiles: [Int: DeviceProfile] = [:]
    private var announced = false

    /// `controls`: the system controls to show, in order (`zoom`, `exposure-bias`); a control
    /// the camera cannot drive (no zoom control, say) is left out.
    public init(
        camera: any CameraBackend = SimCamera(), configuration: ControlsConfiguration = .init(),
        rememberedControl: String? = nil, controls: [String] = ["zoom", "exposure-bias"]
    ) {
        self.camera = camera
        session = ControlsSession(configuration: configuration, rememberedControl: rememberedControl)
        let start = Timestamp(microseconds: 0)
        session.beginConfiguration()
        for name in controls {
            let control: Control?
            switch name {
            case "zoom": control = try? Control.systemZoomSlider(camera: camera)
            case "exposure-bias": control = try? Control.systemExposureBiasSlider(camera: camera)
            default: control = nil
            }
            if let control, session.canAddControl(control) { _ = try? session.addControl(control, at: start) }
        }
        _ = session.commitConfiguration(at: start)
    }

    public func deviceAdded(_ profile: DeviceProfile, index: Int, at now: Timestamp) -> [ReplayOutput] {
        profiles[index] = profile
        session.deviceAdded(profile)
        guard !announced else { return [] }
        announced = true
        let names = session.controls.map(\.name)
        let current = session.currentControl?.name
        var extra: [(String, JSONValue)] = [("controls", .array(names.map { .string($0) }))]
        if let current { extra.append(("control", .string(current))) }
        return [
            .line(
                json: JSONLines.controls(state: "configured", time: now, extra: extra),
                text: "\(ReadableLines.pad(now.description, 12)) controls  configured \(names.joined(separator: ", "))"
                    + (current.map { " (current \($0))" } ?? ""))
        ]
    }

    public func handle(frame: [InputEvent], device index: Int, inputs: [ControlInput], at now: Timestamp) -> [ReplayOutput] {
        guard let node = profiles[index]?.node else { return [] }
        return lines(session.handle(frame: frame, from: node, at: now))
    }

    public func eventsLost(device index: Int, at now: Timestamp) -> [ReplayOutput] {
        if let p = profiles[index] { session.eventsLost(node: p.node, profile: p) }
        return []
    }

    public var nextDeadline: Timestamp? { session.nextDeadline }

    /// Runs every timeout due at or before `now`, each at its own deadline.
    public func advance(to now: Timestamp) -> [ReplayOutput] {
        var out: [ReplayOutput] = []
        while let deadline = session.nextDeadline, deadline <= now {
            out += lines(session.advance(to: deadline))
        }
        return out
    }

    public func deviceRemoved(index: Int, at now: Timestamp) -> [ReplayOutput] {
        if let p = profiles.removeValue(forKey: index) { session.deviceRemoved(node: p.node) }
        return []
    }

    /// The camera's values or ranges changed elsewhere (a V4L2 control event, a replug):
    /// the controls follow, so the next slide starts from the camera's value.
    public func cameraChanged(at now: Timestamp) -> [ReplayOutput] {
        lines(session.cameraChanged(camera, at: now))
    }

    /// The camera went away (false) or came back (true): its controls are disabled (listed,
    /// not changeable) or enabled again.
    public func cameraAvailable(_ available: Bool, at now: Timestamp) -> [ReplayOutput] {
        var events: [ControlsEvent] = []
        for control in session.controls where control.binding.camera != nil {
            events += session.setEnabled(available, named: control.name, at: now)
        }
        return lines(events)
    }

    /// What a display needs to draw a control (`evcapture monitor`'s bar): title, range,
    /// prominent values, value format.
    func displayFields(_ name: String) -> [(String, JSONValue)] {
        guard let c = session.core.control(named: name) else { return [] }
        var fields: [(String, JSONValue)] = [("title", .string(c.title))]
        switch c.scale {
        case .continuous(let range, let prominent):
            fields += [("min", .double(range.lowerBound)), ("max", .double(range.upperBound))]
            if !prominent.isEmpty { fields.append(("prominent", .array(prominent.map { .double($0) }))) }
        case .discrete(let values):
            fields += [("min", .double(values.first ?? 0)), ("max", .double(values.last ?? 0))]
        case .index:
            fields.append(("display", .string(c.displayValue)))
        }
        fields.append(("format", .string(c.valueFormat)))
        return fields
    }

    /// The JSON and readable lines of controls events.
    func lines(_ events: [ControlsEvent]) -> [ReplayOutput] {
        events.compactMap { event in
            switch event {
            case .value(let v):
                let shown = session.core.control(named: v.control).map { c -> String in
                    var c = c
                    c.value = v.value
                    return c.displayValue
                } ?? String(v.value)
                return .line(
                    json: JSONLines.control(v.control, value: v.value, raw: v.raw, time: v.time, extra: displayFields(v.control)),
                    text: "\(ReadableLines.pad(v.time.description, 12)) control   \(v.control) \(shown)"
                        + (v.raw.map { " (raw \($0))" } ?? "") + (v.origin == .external ? " [external]" : ""))
            case .state(let change, let control, let time):
                return .line(
                    json: JSONLines.controls(state: change.rawValue, time: time, extra: control.map { [("control", .string($0))] } ?? []),
                    text: "\(ReadableLines.pad(time.description, 12)) controls  \(change.rawValue)" + (control.map { " \($0)" } ?? ""))
            case .error(let error, let control, let time):
                return .line(
                    json: JSONLines.error("control \(control): \(error)", time: time),
                    text: "\(ReadableLines.pad(time.description, 12)) error     control \(control): \(error)")
            case .currentControl(let name):
                onCurrentControl?(name)
                return nil
            case .controlsChanged:
                // The control set is fixed during a replay (announced as `configured` with
                // the first device); the current control is what a daemon would persist.
                return nil
            }
        }
    }
}
