import Capture
#if canImport(Glibc)
import Glibc
#endif

/// The system zoom slider's mapping between `zoom_absolute` and the factor a person sees:
/// factor = raw / minimum, so the minimum is 1.0× (UVC cameras report 100…500: 1.0×…5.0×).
/// A camera whose minimum is 0 or less gets factor = 1 + (raw − minimum) / 100 instead.
struct ZoomMapping: Sendable, Hashable {
    public var minimum: Int64
    public var maximum: Int64
    public var step: Int64

    public init(_ info: CameraControlInfo) {
        minimum = info.minimum
        maximum = Swift.max(info.maximum, info.minimum)
        step = Swift.max(1, info.step)
    }

    public func factor(raw: Int64) -> Double {
        let f = minimum > 0 ? Double(raw) / Double(minimum) : 1 + Double(raw - minimum) / 100
        return ControlScale.tidy(f)
    }

    /// The raw value for `factor`, clamped and rounded to the control's step.
    public func raw(factor: Double) -> Int64 {
        let exact = minimum > 0 ? factor * Double(minimum) : Double(minimum) + (factor - 1) * 100
        let steps = ((exact - Double(minimum)) / Double(step)).rounded()
        return Swift.min(Swift.max(minimum + Int64(steps) * step, minimum), maximum)
    }

    /// The continuous scale: 1.0× … max factor, with whole factors (2×, 3×, …) prominent.
    public var scale: ControlScale {
        let top = factor(raw: maximum)
        let prominent = top >= 2 ? (2...Int(top)).map(Double.init).filter { $0 < top } : []
        return .continuous(range: 1...Swift.max(1, top), prominentValues: prominent)
    }
}

extension Control {
    /// The system zoom slider for `camera`'s `zoom_absolute` (name `"zoom"`, format `%.1f×`).
    static func systemZoomSlider(camera: any CameraBackend, action: ControlAction? = nil) throws(CameraError) -> Control {
        guard let info = try camera.controls().first(where: { $0.id == .zoomAbsolute }) else {
            throw CameraError(code: .noSuchControl, device: camera.identity, control: "zoom_absolute", context: "")
        }
        let map = ZoomMapping(info)
        return Control(
            name: "zoom", title: "Zoom", symbolName: "plus.magnifyingglass", scale: map.scale,
            value: map.factor(raw: info.value), valueFormat: "%.1f×", isEnabled: !info.isReadOnly,
            binding: .systemZoom(camera), action: action)
    }

    /// The system exposure-bias slider for `camera` (name `"exposure-bias"`, −2…+2 EV in 1/3
    /// steps, format `%+.1f EV`): bound to `auto_exposure_bias` when the camera has it, else
    /// emulated on `exposure_time_absolute` (needs it and `auto_exposure`).
    static func systemExposureBiasSlider(camera: any CameraBackend, action: ControlAction? = nil) throws(CameraError) -> Control {
        let list = try camera.controls()
        let value: Double
        switch ExposureBiasMethod(lookup: { id in list.first { $0.id == id } }) {
        case .native(let bias): value = ExposureBiasDriver.ev(ofMenuIndex: bias.value, in: bias) ?? 0
        case .emulated: value = 0
        case .unavailable: throw ExposureBiasMethod.unavailableError(camera)
        }
        return Control(
            name: "exposure-bias", title: "Exposure", symbolName: "plusminus.circle",
            scale: .discrete(values: exposureBiasValues), value: value, valueFormat: "%+.1f EV",
            binding: .systemExposureBias(camera), action: action)
    }

    /// The default controls for a camera when nothing is configured: the system zoom slider
    /// first, then the exposure-bias slider — each only when the camera has what it needs.
    static func defaultControls(camera: any CameraBackend) -> [Control] {
        var list: [Control] = []
        if let zoom = try? systemZoomSlider(camera: camera) { list.append(zoom) }
        if let bias = try? systemExposureBiasSlider(camera: camera) { list.append(bias) }
        return list
    }
}

/// How a camera's exposure bias is driven: the one place that decides it, for the slider, the
/// driver and the camera's bindings.
public enum ExposureBiasMethod: Sendable, Hashable {
    /// `auto_exposure_bias` (an integer menu in 0.001 EV).
    case native(CameraControlInfo)
    /// No bias control: manual mode on `auto_exposure` (it must offer the manual entry, 1)
    /// and base × 2^EV on `exposure_time_absolute`.
    case emulated(auto: CameraControlInfo, time: CameraControlInfo)
    case unavailable

    /// Decides from the controls `lookup` finds by id.
    public init<E: Error>(lookup: (CameraControlID) throws(E) -> CameraControlInfo?) throws(E) {
        if let bias = try lookup(.autoExposureBias) {
            self = .native(bias)
        } else if let auto = try lookup(.exposureAuto), let time = try lookup(.exposureAbsolute),
            auto.menu.isEmpty || auto.menu[1] != nil
        {
            self = .emulated(auto: auto, time: time)
        } else {
            self = .unavailable
        }
    }

    static func unavailableError(_ camera: any CameraBackend) -> CameraError {
        CameraError(
            code: .noSuchControl, device: camera.identity, control: "auto_exposure_bias",
            context: "neither auto_exposure_bias nor exposure_time_absolute with a manual auto_exposure")
    }
}

/// Drives one camera's exposure bias (docs/behaviour.md#camera-controls).
///
/// With `auto_exposure_bias` (an integer menu in 0.001 EV) the nearest menu entry is set.
/// Otherwise it is emulated: when the bias leaves 0 the current `exposure_time_absolute` is
/// taken as the base and `auto_exposure` goes to manual (1); each bias sets
/// exposure = base × 2^EV, clamped by the camera; back at 0 the base exposure is restored and
/// `auto_exposure` returns to auto (0).
public struct ExposureBiasDriver: Sendable, Hashable {
    /// The exposure when the bias left 0, while emulating a non-zero bias.
    public private(set) var base: Int64?

    public init() {}

    /// Applies `ev`; returns the raw value the camera holds (menu index, or exposure time).
    public mutating func apply(_ ev: Double, camera: any CameraBackend) throws(CameraError) -> Int64 {
        switch try ExposureBiasMethod(lookup: { id throws(CameraError) in try camera.cachedControl(id) }) {
        case .native(let bias):
            let target = Int64((ev * 1000).rounded())
            let best = bias.menu.compactMap { (i, text) in Int64(text).map { (i, $0) } }
                .min {
                    Swift.abs($0.1 - target) < Swift.abs($1.1 - target)
                        || (Swift.abs($0.1 - target) == Swift.abs($1.1 - target) && $0.0 < $1.0)
                }
            guard let (index, _) = best else {
                throw CameraError(code: .failed, device: camera.identity, control: bias.name, context: "empty menu")
            }
            return try camera.set(.autoExposureBias, to: index)
        case .unavailable: throw ExposureBiasMethod.unavailableError(camera)
        case .emulated: break
        }
        if ev == 0 {
            guard let b = base else { return try camera.value(of: .exposureAbsolute) }
            base = nil
            let raw = try camera.set(.exposureAbsolute, to: b)
            try camera.set(.exposureAuto, to: 0)
            return raw
        }
        if base == nil {
            base = try camera.value(of: .exposureAbsolute)
            try camera.set(.exposureAuto, to: 1)
        }
        let target = (Double(base!) * exp2(ev)).rounded()
        return try camera.set(.exposureAbsolute, to: Int64(Swift.min(target, Double(Int64.max / 2))))
    }

    /// The bias the camera shows now, for following changes made elsewhere: the menu entry's
    /// EV, or 0 once `auto_exposure` is back on auto while emulating. `nil`: nothing to follow.
    mutating func readBack(camera: any CameraBackend, current: Double) -> Double? {
        guard let list = try? camera.controls() else { return nil }
        if let bias = list.first(where: { $0.id == .autoExposureBias }) {
            return Self.ev(ofMenuIndex: bias.value, in: bias)
        }
        if current != 0, let auto = list.first(where: { $0.id == .exposureAuto }), auto.value == 0 {
            base = nil
            return 0
        }
        return nil
    }

    /// The EV of an integer-menu index, snapped to the nearest 1/3 EV step.
    static func ev(ofMenuIndex index: Int64, in info: CameraControlInfo) -> Double? {
        guard let text = info.menu[index], let milli = Int64(text) else { return nil }
        return ControlScale.discrete(values: exposureBiasValues).clamped(Double(milli) / 1000)
    }
}
