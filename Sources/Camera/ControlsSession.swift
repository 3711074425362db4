import Capture
import Vocabulary

/// The session's controls (docs/behaviour.md#controls): the controls, the devices that drive them, and the
/// cameras the system sliders are bound to.
///
/// It wraps the pure `ControlsCore`: frames go through each device's `SliderDecoder`, the
/// core's value changes are applied to the bound camera (synchronous `CameraBackend` calls,
/// one ioctl each) and handed to the control's action. It reads no clock: the caller passes
/// the time in and calls `advance(to:)` at `nextDeadline`. Use it from one task or thread.
public final class ControlsSession {
    public private(set) var core: ControlsCore
    /// Each device's decoder, in a box: a frame mutates its decoder in place, never the
    /// dictionary (whose modify accessor copied it: three allocations per knob detent).
    private final class Decoder {
        var decoder: SliderDecoder
        init(_ decoder: SliderDecoder) { self.decoder = decoder }
    }
    private var decoders: [String: Decoder] = [:]
    private var biasDrivers: [String: ExposureBiasDriver] = [:]

    /// `rememberedControl`: the name from the state file (see `ControlsEvent.currentControl`).
    public init(configuration: ControlsConfiguration = .init(), rememberedControl: String? = nil) {
        core = ControlsCore(configuration: configuration, rememberedControl: rememberedControl)
    }

    // MARK: Devices

    /// Starts decoding `profile`'s frames (a device appeared).
    public func deviceAdded(_ profile: DeviceProfile) {
        decoders[profile.node] = Decoder(SliderDecoder(profile: profile))
    }

    /// Stops decoding the device at `node` (it went away).
    public func deviceRemoved(node: String) {
        decoders[node] = nil
    }

    /// True while a slider-capable device is present.
    var supportsControls: Bool { decoders.values.contains(where: \.decoder.isSliderCapable) }

    // MARK: Controls

    public var controls: [Control] { core.controls }
    public var maxControlsCount: Int { core.maxControlsCount }
    public var currentControl: Control? { core.currentControl }
    public var phase: ControlsCore.Phase { core.phase }
    /// The earliest of the core's timeouts and a held shuttle ring's next step.
    public var nextDeadline: Timestamp? {
        var next = core.nextDeadline
        for box in decoders.values {
            if let d = box.decoder.nextDeadline, next == nil || d < next! { next = d }
        }
        return next
    }

    public func canAddControl(_ control: Control) -> Bool { core.canAddControl(control) }

    public func addControl(_ control: Control, at now: Timestamp) throws(ControlsConfigurationError) -> [ControlsEvent] {
        try core.addControl(control, at: now)
    }

    public func removeControl(named name: String, at now: Timestamp) throws(ControlsConfigurationError) -> [ControlsEvent] {
        biasDrivers[name] = nil
        return try core.removeControl(named: name, at: now)
    }

    public func beginConfiguration() { core.beginConfiguration() }

    public func commitConfiguration(at now: Timestamp) -> [ControlsEvent] { core.commitConfiguration(at: now) }

    public func setEnabled(_ enabled: Bool, named name: String, at now: Timestamp) -> [ControlsEvent] {
        core.setEnabled(enabled, named: name, at: now)
    }

    /// Adds the default controls for `camera` (zoom first, so it is current unless a
    /// remembered control exists, then exposure bias), as one configuration.
    func addDefaultControls(camera: any CameraBackend, at now: Timestamp) -> [ControlsEvent] {
        beginConfiguration()
        for control in Control.defaultControls(camera: camera) where canAddControl(control) {
            _ = try? addControl(control, at: now)
        }
        return commitConfiguration(at: now)
    }

    // MARK: Input

    /// Handles one frame of the device at `node` at `now` (by default the time of the frame's
    /// last event).
    public func handle(frame: [InputEvent], from node: String, at now: Timestamp? = nil) -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        handle(frame: frame, from: node, at: now, into: &out)
        return out
    }

    /// ``handle(frame:from:at:)`` appending to `out`: the knob's hot path, which allocates
    /// nothing once `out` has room (the frame is decoded once, in place).
    public func handle(frame: [InputEvent], from node: String, at now: Timestamp? = nil, into out: inout [ControlsEvent]) {
        guard let time = now ?? frame.last?.time else { return }
        decoders[node]?.decoder.decode(frame, at: time) { input in
            let start = out.count
            core.handle(input, at: time, into: &out)
            apply(&out, from: start)
        }
    }

    /// A frame of the device at `node` read while nothing is to be moved (the session is
    /// stopped): its positions are followed, nothing moves.
    public func observe(frame: [InputEvent], from node: String) {
        guard let box = decoders[node], box.decoder.followsPositions else { return }
        box.decoder.observe(frame)
    }

    /// Events of the device at `node` were lost (`SYN_DROPPED`): its partial wheel detents and
    /// last axis positions are forgotten, as if it had just appeared (a counter's next value
    /// only sets its reference again).
    public func eventsLost(node: String, profile: DeviceProfile) {
        decoders[node]?.decoder = SliderDecoder(profile: profile)
    }

    /// Handles one input at `now`.
    public func handle(_ input: ControlsInput, at now: Timestamp) -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        core.handle(input, at: now, into: &out)
        apply(&out, from: 0)
        return out
    }

    /// Handles the timeouts due at `now`, and the steps a held shuttle ring owes by then
    /// (docs/behaviour.md#slider-inputs).
    public func advance(to now: Timestamp) -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        for node in decoders.keys.sorted() {
            guard let box = decoders[node], box.decoder.nextDeadline.map({ $0 <= now }) == true else { continue }
            box.decoder.advance(to: now) { input in
                let start = out.count
                core.handle(input, at: now, into: &out)
                apply(&out, from: start)
            }
        }
        core.advance(to: now, into: &out)
        return out
    }

    /// The app changed a value: the control follows (and a camera-bound control's camera is set).
    public func controlValueChangedExternally(named name: String, to value: Double, at now: Timestamp) -> [ControlsEvent] {
        var events = core.controlValueChangedExternally(named: name, to: value, at: now)
        for i in events.indices {
            guard case .value(var change) = events[i], let control = core.control(named: name) else { continue }
            switch applyToCamera(control, at: now) {
            case .success(let raw):
                change.raw = raw
                change.value = core.control(named: name)?.value ?? change.value
                events[i] = .value(change)
            case .failure(let error):
                events.append(.error(ControlRefusal(error), control: name, time: now))
            case nil:
                break
            }
        }
        return events
    }

    /// A camera reported changed values or ranges (a V4L2 control event, another program):
    /// refreshes the zoom range and follows values changed elsewhere.
    public func cameraChanged(_ camera: any CameraBackend, at now: Timestamp) -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        for control in core.controls where control.binding.camera?.identity == camera.identity {
            switch control.binding {
            case .systemZoom:
                guard let info = try? camera.controls().first(where: { $0.id == .zoomAbsolute }) else { continue }
                let map = ZoomMapping(info)
                if map.scale != control.scale {
                    out += core.updateControl(named: control.name, at: now) { $0.scale = map.scale }
                }
                let factor = map.factor(raw: info.value)
                if factor != core.control(named: control.name)?.value {
                    out += core.controlValueChangedExternally(named: control.name, to: factor, raw: info.value, at: now)
                }
            case .systemExposureBias:
                var driver = biasDrivers[control.name] ?? ExposureBiasDriver()
                if let ev = driver.readBack(camera: camera, current: control.value), ev != control.value {
                    out += core.controlValueChangedExternally(named: control.name, to: ev, at: now)
                }
                biasDrivers[control.name] = driver
            case .app, .digitalZoom:
                break
            }
        }
        return out
    }

    // MARK: Applying

    /// Applies the core's value changes in `events[start...]` to cameras and actions, in
    /// place: a value becomes what the camera holds, or an error when the camera refused it.
    private func apply(_ events: inout [ControlsEvent], from start: Int) {
        for i in start..<events.count {
            guard case .value(var change) = events[i], change.origin == .person,
                let control = core.control(named: change.control)
            else { continue }
            switch applyToCamera(control, at: change.time) {
            case .success(let raw):
                change.raw = raw
                change.value = core.control(named: change.control)?.value ?? change.value
            case .failure(let error):
                events[i] = .error(ControlRefusal(error), control: change.control, time: change.time)
                continue
            case nil:
                break
            }
            events[i] = .value(change)
            control.action?.deliver(change.value)
        }
    }

    /// Sets the camera for a camera-bound control and corrects the control to what the camera
    /// holds. `nil` for app controls.
    private func applyToCamera(_ control: Control, at now: Timestamp) -> Result<Int64, CameraError>? {
        do throws(CameraError) {
            guard let bound = control.binding.camera else { return nil }
            guard let camera = control.binding.backend else {
                throw CameraError(code: .failed, device: bound.identity, context: "not a camera the camera module drives")
            }
            if control.binding.systemKind == "zoom" {
                guard let info = try camera.cachedControl(.zoomAbsolute) else {
                    throw CameraError(code: .noSuchControl, device: camera.identity, control: "zoom_absolute", context: "")
                }
                let map = ZoomMapping(info)
                let raw = try camera.set(.zoomAbsolute, to: map.raw(factor: control.value))
                core.correctValue(named: control.name, to: map.factor(raw: raw))
                return .success(raw)
            }
            var driver = biasDrivers[control.name] ?? ExposureBiasDriver()
            defer { biasDrivers[control.name] = driver }
            return .success(try driver.apply(control.value, camera: camera))
        } catch {
            return .failure(error)
        }
    }
}
