import Synchronization
import Udev

/// A simulated camera that behaves like a typical UVC webcam under uvcvideo, for
/// `evcapture replay --camera sim` and tests:
/// - `zoom_absolute` 100…500, step 1, default 100;
/// - `auto_exposure` menu 0 "Auto Mode" / 1 "Manual Mode", default auto;
/// - `exposure_time_absolute` 3…2047 (100 µs units), default 250, flagged inactive in auto mode.
///
/// Integer values are clamped to the range and rounded to the step, as uvcvideo does; a menu
/// index outside the menu is refused with `.outOfRange` (uvcvideo answers `EINVAL`).
/// Setting the exposure time while in auto mode is accepted and stored, as the V4L2 control
/// framework does for inactive controls.
public final class SimCamera: CameraBackend {
    public let identity: String
    private let state: Mutex<[CameraControlInfo]>
    /// Every successful set, in order, for tests (`id`, value held afterwards).
    private let log = Mutex<[(CameraControlID, Int64)]>([])

    public init(identity: String = "sim") {
        self.identity = identity
        state = Mutex([
            CameraControlInfo(
                id: .zoomAbsolute, name: "zoom_absolute", minimum: 100, maximum: 500, step: 1, defaultValue: 100, value: 100),
            CameraControlInfo(
                id: .exposureAuto, name: "auto_exposure", kind: .menu, minimum: 0, maximum: 1, step: 1, defaultValue: 0,
                value: 0, menu: [0: "Auto Mode", 1: "Manual Mode"]),
            CameraControlInfo(
                id: .exposureAbsolute, name: "exposure_time_absolute", minimum: 3, maximum: 2047, step: 1, defaultValue: 250,
                value: 250, isInactive: true),
        ])
    }

    public func controls() throws(CameraError) -> [CameraControlInfo] { state.withLock { $0 } }

    public func value(of id: CameraControlID) throws(CameraError) -> Int64 {
        guard let v = state.withLock({ list in list.first { $0.id == id }?.value }) else {
            throw CameraError(code: .noSuchControl, device: identity, control: id.description, context: "")
        }
        return v
    }

    @discardableResult
    public func set(_ id: CameraControlID, to value: Int64) throws(CameraError) -> Int64 {
        let result: Result<Int64, CameraError> = state.withLock { list in
            guard let i = list.firstIndex(where: { $0.id == id }) else {
                return .failure(CameraError(code: .noSuchControl, device: identity, control: id.description, context: ""))
            }
            let info = list[i]
            if info.isReadOnly { return .failure(CameraError(code: .readOnly, device: identity, control: info.name, context: "")) }
            let held: Int64
            if info.kind == .menu {
                guard info.menu[value] != nil else {
                    let indices = info.menu.keys.sorted().map(String.init).joined(separator: ", ")
                    return .failure(
                        CameraError(
                            code: .outOfRange, device: identity, control: info.name, context: "\(value) is not a menu index (\(indices))"))
                }
                held = value
            } else {
                held = Self.clampedAndRounded(value, info)
            }
            list[i].value = held
            if id == .exposureAuto, let e = list.firstIndex(where: { $0.id == .exposureAbsolute }) {
                list[e].isInactive = held == 0
            }
            return .success(held)
        }
        let held = try result.get()
        log.withLock { $0.append((id, held)) }
        return held
    }

    /// One control, without copying the list (the knob's path asks for the zoom control at
    /// every detent).
    public func cachedControl(_ id: CameraControlID) throws(CameraError) -> CameraControlInfo? {
        state.withLock { list in list.first { $0.id == id } }
    }

    /// Changes a value as another program using the camera would (no log entry).
    func changeExternally(_ id: CameraControlID, to value: Int64) {
        state.withLock { list in
            guard let i = list.firstIndex(where: { $0.id == id }) else { return }
            list[i].value = list[i].kind == .menu ? value : Self.clampedAndRounded(value, list[i])
            if id == .exposureAuto, let e = list.firstIndex(where: { $0.id == .exposureAbsolute }) {
                list[e].isInactive = list[i].value == 0
            }
        }
    }

    /// Changes a control's range as a format change would.
    func changeRange(_ id: CameraControlID, minimum: Int64, maximum: Int64) {
        state.withLock { list in
            guard let i = list.firstIndex(where: { $0.id == id }) else { return }
            list[i].minimum = minimum
            list[i].maximum = maximum
            list[i].value = Self.clampedAndRounded(list[i].value, list[i])
        }
    }

    /// The sets so far, in order.
    public var setLog: [(id: CameraControlID, value: Int64)] { log.withLock { $0.map { (id: $0.0, value: $0.1) } } }

    /// uvcvideo's rule: clamp to [min, max], then round to the nearest step from the minimum.
    static func clampedAndRounded(_ value: Int64, _ info: CameraControlInfo) -> Int64 {
        let v = Swift.min(Swift.max(value, info.minimum), info.maximum)
        let step = Swift.max(1, info.step)
        var r = info.minimum + ((v - info.minimum) + step / 2) / step * step
        if r > info.maximum { r -= step }
        return r
    }
}
