import EvcaptureTesting
import Capture
import Evdev
import Synchronization

/// A time `s` seconds after the start of a scenario.

/// A seeded random generator (SplitMix64) so property tests are repeatable.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A minimal in-memory camera for the core's tests (the UVC-like simulator lives in Bridge).
final class FakeCamera: CameraBackend {
    let identity: String
    let state: Mutex<[CameraControlInfo]>
    init(identity: String = "fake", controls: [CameraControlInfo]) {
        self.identity = identity
        state = Mutex(controls)
    }
    func controls() throws(CameraError) -> [CameraControlInfo] { state.withLock { $0 } }
    func value(of id: CameraControlID) throws(CameraError) -> Int64 {
        guard let v = state.withLock({ $0.first { $0.id == id }?.value }) else {
            throw CameraError(code: .noSuchControl, device: identity, control: id.description, context: "")
        }
        return v
    }
    @discardableResult
    func set(_ id: CameraControlID, to value: Int64) throws(CameraError) -> Int64 {
        let r: Int64? = state.withLock { list in
            guard let i = list.firstIndex(where: { $0.id == id }) else { return nil }
            let c = list[i]
            list[i].value = min(max(value, c.minimum), c.maximum)
            return list[i].value
        }
        guard let r else { throw CameraError(code: .noSuchControl, device: identity, control: id.description, context: "") }
        return r
    }

    static func uvc(identity: String = "fake", zoom: ClosedRange<Int64> = 100...500) -> FakeCamera {
        FakeCamera(identity: identity, controls: [
            CameraControlInfo(id: .zoomAbsolute, name: "zoom_absolute", minimum: zoom.lowerBound, maximum: zoom.upperBound, defaultValue: zoom.lowerBound, value: zoom.lowerBound),
            CameraControlInfo(id: .exposureAuto, name: "auto_exposure", kind: .menu, minimum: 0, maximum: 1, defaultValue: 0, value: 0, menu: [0: "Auto Mode", 1: "Manual Mode"]),
            CameraControlInfo(id: .exposureAbsolute, name: "exposure_time_absolute", minimum: 3, maximum: 2047, defaultValue: 250, value: 250),
        ])
    }
}

/// The state changes among `events`, as (change, control) pairs.
func states(_ events: [ControlsEvent]) -> [String] {
    events.compactMap {
        if case .state(let s, let c, _) = $0 { return "\(s.rawValue):\(c ?? "-")" }
        return nil
    }
}

/// The value changes among `events`.
func values(_ events: [ControlsEvent]) -> [Double] {
    events.compactMap {
        if case .value(let v) = $0 { return v.value }
        return nil
    }
}

/// Three app controls: a continuous slider, a discrete slider and a picker.
func appControls() -> [Control] {
    [
        .slider(name: "focus", title: "Focus", symbolName: "scope", range: 0...10, value: 0, prominentValues: [5], format: "%.1f"),
        .slider(name: "iso", title: "ISO", symbolName: "camera.aperture", values: [100, 200, 400, 800, 1600], value: 100, format: "%.0f"),
        .indexPicker(name: "wb", title: "White balance", symbolName: "sun.max", titles: ["Auto", "Daylight", "Cloudy", "Tungsten"]),
    ]
}

func core(_ controls: [Control], configuration: ControlsConfiguration = .init(), remembered: String? = nil) -> ControlsCore {
    var c = ControlsCore(configuration: configuration, rememberedControl: remembered)
    c.beginConfiguration()
    for control in controls { _ = try! c.addControl(control, at: at(0)) }
    _ = c.commitConfiguration(at: at(0))
    return c
}
