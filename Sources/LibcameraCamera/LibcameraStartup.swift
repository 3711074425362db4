import Camera

/// What the daemon says at start about `[camera] backend` and `libcamera-camera`
/// (docs/libcamera.md): one line, or nothing when libcamera was not asked for.
public enum LibcameraStartup {
    /// The line to log; nil for `backend = "v4l2"`, and for `"auto"` without a libcamera
    /// camera named (libcamera is then not started at all). `libcamera` is evaluated only
    /// when needed.
    public static func line(
        backend: CameraBackendSetting, cameraID: String?, libcamera: () -> Result<Libcamera, LibcameraError>
    ) -> String? {
        switch backend {
        case .v4l2: return nil
        case .auto where cameraID == nil: return nil
        case .auto, .libcamera: break
        }
        let lc: Libcamera
        switch libcamera() {
        case .failure(let error): return "libcamera: not available (\(error)); the V4L2 backend goes on"
        case .success(let started): lc = started
        }
        let cameras = lc.cameras()
        guard let id = cameraID else {
            return "libcamera \(lc.version): \(cameras.count) camera(s), none named by camera.libcamera-camera; "
                + "photos, videos and the live view come from V4L2"
        }
        guard let camera = cameras.first(where: { $0.id == id }) else {
            let listed = cameras.isEmpty ? "none" : cameras.map(\.id).joined(separator: ", ")
            return "libcamera: no camera \"\(id)\" (camera.libcamera-camera; libcamera lists: \(listed)); the V4L2 backend goes on"
        }
        let model = camera.model.isEmpty ? "" : " (\(camera.model))"
        return "libcamera: camera \"\(id)\"\(model) found; photos, videos and the live view still come from V4L2 (docs/libcamera.md)"
    }
}
