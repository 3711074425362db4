import Camera
import Synchronization

/// Where the controls backend sends libcamera control values: the stream, which puts them
/// on its next request (``LibcameraStream``), or a recorder in tests.
public protocol LibcameraControlSink: Sendable {
    func set(_ id: UInt32, float value: Float) throws(LibcameraError)
    func set(_ id: UInt32, rectangle value: SensorRect) throws(LibcameraError)
    /// Integer and boolean controls (`ExposureTime`, `AeEnable`).
    func set(_ id: UInt32, integer value: Int64) throws(LibcameraError)
    /// The exposure time (µs) of the latest frame as the camera reported it (`ExposureTime`
    /// in the request's metadata): what auto exposure chose. nil when no frame said.
    var reportedExposureTime: Int64? { get }
}

extension LibcameraControlSink {
    public var reportedExposureTime: Int64? { nil }
}

extension LibcameraStream: LibcameraControlSink {}

/// A libcamera camera as the controls core's ``CameraBackend``: `zoom_absolute` (hundredths)
/// becomes `ScalerCrop` (``ScalerCropZoom``), `auto_exposure_bias` (an integer menu of
/// milli-EV) becomes `ExposureValue` (``ExposureValueMapping``). The camera keeps no
/// readable value of its own for either, so the value held is the last one set.
///
/// A camera without `ExposureValue` but with `ExposureTime` and `AeEnable` (libcamera's UVC
/// pipeline handler) offers them as V4L2's `auto_exposure` (0 auto, 1 manual: `AeEnable`
/// true, false) and `exposure_time_absolute` (in the camera's µs): the controls core then
/// emulates the bias on them as for a V4L2 camera without `auto_exposure_bias`
/// (`ExposureBiasMethod.emulated`, `ExposureBiasDriver`). While auto exposure runs, the
/// exposure time read is the latest frame's (``LibcameraControlSink/reportedExposureTime``),
/// else the last one set, else the control's default.
public final class LibcameraControls: CameraBackend {
    public let identity: String
    private let sink: any LibcameraControlSink
    private let zoom: (id: UInt32, geometry: ScalerCropZoom)?
    private let exposure: (id: UInt32, mapping: ExposureValueMapping)?
    private let exposureTime: (time: UInt32, aeEnable: UInt32, range: ClosedRange<Int64>, defaultValue: Int64)?
    private let values: Mutex<[CameraControlID: Int64]>

    /// `controls`: the camera's (``Libcamera/controls(of:)``); `cropMaximum`: its
    /// `ScalerCropMaximum` property. A control the camera lacks is not offered.
    public init(
        identity: String, controls: [LibcameraControl], cropMaximum: SensorRect?, sink: any LibcameraControlSink
    ) {
        self.identity = identity
        self.sink = sink
        let byName = Dictionary(controls.map { ($0.name, $0) }) { a, _ in a }
        if let crop = byName["ScalerCrop"], crop.kind == .rectangle, let maximum = cropMaximum,
            maximum.width > 0, maximum.height > 0
        {
            let minimum = crop.minimumRect.flatMap { $0.width > 0 && $0.height > 0 ? $0 : nil }
            zoom = (crop.id, ScalerCropZoom(maximum: maximum, minimumWidth: minimum?.width, minimumHeight: minimum?.height))
        } else {
            zoom = nil
        }
        if let ev = byName["ExposureValue"], ev.kind == .float {
            exposure = (ev.id, ExposureValueMapping(minimum: ev.minimum, maximum: ev.maximum))
        } else {
            exposure = nil
        }
        // ExposureTime is an int32 of µs: a range that ends at or below its start ([29..0] on
        // some Pi sensors) says nothing and is not offered.
        let top = Double(Int32.max)
        if exposure == nil, let time = byName["ExposureTime"], time.kind == .int32 || time.kind == .int64,
            let ae = byName["AeEnable"], ae.kind == .bool, time.minimum.isFinite, time.maximum.isFinite,
            case let low = min(max(1, time.minimum.rounded(.up)), top), case let high = min(time.maximum.rounded(.down), top),
            high > low
        {
            let preferred = time.defaultValue.isFinite ? min(max(time.defaultValue.rounded(), low), high) : low
            exposureTime = (time.id, ae.id, Int64(low)...Int64(high), Int64(preferred))
        } else {
            exposureTime = nil
        }
        var initial: [CameraControlID: Int64] = [:]
        if zoom != nil { initial[.zoomAbsolute] = 100 }
        if let exposure { initial[.autoExposureBias] = Int64(exposure.mapping.index(ofEV: 0)) }
        if let exposureTime {
            initial[.exposureAuto] = 0
            initial[.exposureAbsolute] = exposureTime.defaultValue
        }
        values = Mutex(initial)
    }

    public func controls() throws(CameraError) -> [CameraControlInfo] {
        let current = values.withLock { $0 }
        var list: [CameraControlInfo] = []
        if let zoom {
            let range = zoom.geometry.zoomRange
            list.append(
                CameraControlInfo(
                    id: .zoomAbsolute, name: "zoom_absolute", minimum: Int64(range.lowerBound),
                    maximum: Int64(range.upperBound), defaultValue: 100, value: current[.zoomAbsolute] ?? 100))
        }
        if let exposure {
            let menu = exposure.mapping.menu
            let zero = Int64(exposure.mapping.index(ofEV: 0))
            list.append(
                CameraControlInfo(
                    id: .autoExposureBias, name: "auto_exposure_bias", kind: .integerMenu, minimum: 0,
                    maximum: Int64(menu.count - 1), defaultValue: zero, value: current[.autoExposureBias] ?? zero,
                    menu: Dictionary(uniqueKeysWithValues: menu.enumerated().map { (Int64($0.offset), String($0.element)) })))
        }
        if let exposureTime {
            let auto = current[.exposureAuto] ?? 0
            let held = current[.exposureAbsolute] ?? exposureTime.defaultValue
            // Under auto exposure the camera's own choice, as the latest frame reported it.
            let time = auto == 0 ? (sink.reportedExposureTime ?? held) : held
            list.append(
                CameraControlInfo(
                    id: .exposureAuto, name: "AeEnable", kind: .menu, minimum: 0, maximum: 1, defaultValue: 0, value: auto,
                    menu: [0: "Auto Mode", 1: "Manual Mode"]))
            list.append(
                CameraControlInfo(
                    id: .exposureAbsolute, name: "ExposureTime", minimum: exposureTime.range.lowerBound,
                    maximum: exposureTime.range.upperBound, defaultValue: exposureTime.defaultValue,
                    value: min(max(time, exposureTime.range.lowerBound), exposureTime.range.upperBound), isInactive: auto == 0))
        }
        return list
    }

    @discardableResult
    public func set(_ id: CameraControlID, to value: Int64) throws(CameraError) -> Int64 {
        guard let info = try controls().first(where: { $0.id == id }) else {
            throw CameraError(code: .noSuchControl, device: identity, control: "\(id)", context: "setting a libcamera control")
        }
        let held = min(max(value, info.minimum), info.maximum)
        do {
            if id == .zoomAbsolute, let zoom {
                try sink.set(zoom.id, rectangle: zoom.geometry.crop(zoom: Int(held)))
            } else if id == .autoExposureBias, let exposure {
                try sink.set(exposure.id, float: exposure.mapping.ev(ofIndex: Int(held)))
            } else if id == .exposureAuto, let exposureTime {
                // auto_exposure 1 is manual: AeEnable false.
                try sink.set(exposureTime.aeEnable, integer: held == 1 ? 0 : 1)
            } else if id == .exposureAbsolute, let exposureTime {
                try sink.set(exposureTime.time, integer: held)
            }
        } catch {
            throw CameraError(code: .failed, device: identity, control: info.name, context: error.description)
        }
        values.withLock { $0[id] = held }
        return held
    }

    public func value(of id: CameraControlID) throws(CameraError) -> Int64 {
        if id == .exposureAbsolute, exposureTime != nil, let info = try controls().first(where: { $0.id == id }) {
            return info.value
        }
        guard let value = values.withLock({ $0[id] }) else {
            throw CameraError(code: .noSuchControl, device: identity, control: "\(id)", context: "reading a libcamera control")
        }
        return value
    }
}
