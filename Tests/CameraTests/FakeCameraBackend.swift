import Camera
import Synchronization

/// A minimal in-memory camera for the core's tests (the UVC-like simulator is `SimCamera`).
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
        FakeCamera(
            identity: identity,
            controls: [
                CameraControlInfo(
                    id: .zoomAbsolute, name: "zoom_absolute", minimum: zoom.lowerBound, maximum: zoom.upperBound,
                    defaultValue: zoom.lowerBound, value: zoom.lowerBound),
                CameraControlInfo(
                    id: .exposureAuto, name: "auto_exposure", kind: .menu, minimum: 0, maximum: 1, defaultValue: 0, value: 0,
                    menu: [0: "Auto Mode", 1: "Manual Mode"]),
                CameraControlInfo(
                    id: .exposureAbsolute, name: "exposure_time_absolute", minimum: 3, maximum: 2047, defaultValue: 250, value: 250),
            ])
    }
}
