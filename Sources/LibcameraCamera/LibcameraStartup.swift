import Camera

/// The camera photos, videos and the live view come from when libcamera drives it.
public struct LibcameraChoice: Sendable {
    public let libcamera: Libcamera
    public let camera: LibcameraCameraInfo
}

/// What the daemon does at start about `[camera] backend` and `libcamera-camera`
/// (docs/libcamera.md): whether libcamera drives the camera, and one line saying so (or why not).
public enum LibcameraStartup {
    /// - `backend = "v4l2"`: nothing (libcamera is not loaded);
    /// - `"libcamera"`, or `"auto"` with `libcamera-camera` named: the named camera, else the
    ///   first libcamera lists that V4L2 does not stream on its own, else its first;
    /// - `"auto"` without a name: only when V4L2 found no camera (`v4l2CameraFound` false),
    ///   the first camera libcamera lists that V4L2 does not stream on its own; libcamera is
    ///   loaded only then.
    ///
    /// Without a choice, V4L2 goes on. `libcamera` is evaluated only when needed.
    public static func choose(
        backend: CameraBackendSetting, cameraID: String?, v4l2CameraFound: Bool,
        libcamera: () -> Result<Libcamera, LibcameraError>
    ) -> (line: String?, choice: LibcameraChoice?) {
        switch backend {
        case .v4l2: return (nil, nil)
        case .auto where cameraID == nil && v4l2CameraFound: return (nil, nil)
        case .auto, .libcamera: break
        }
        let lc: Libcamera
        switch libcamera() {
        case .failure(let error): return ("libcamera: not available (\(error)); the V4L2 backend goes on", nil)
        case .success(let started): lc = started
        }
        let cameras = lc.cameras()
        let listed = cameras.isEmpty ? "none" : cameras.map(\.id).joined(separator: ", ")
        guard let camera = pick(from: cameras, backend: backend, cameraID: cameraID) else {
            if let id = cameraID {
                return (
                    "libcamera: no camera \"\(id)\" (camera.libcamera-camera; libcamera lists: \(listed)); the V4L2 backend goes on", nil
                )
            }
            let what = backend == .auto ? "no camera of its own (libcamera lists: \(listed))" : "no camera"
            return ("libcamera \(lc.version): \(what); the V4L2 backend goes on", nil)
        }
        let model = camera.model.isEmpty ? "" : " (\(camera.model))"
        return (
            "libcamera \(lc.version): photos, videos and the live view from camera \"\(camera.id)\"\(model)",
            LibcameraChoice(libcamera: lc, camera: camera)
        )
    }

    /// The camera `choose` takes from what libcamera lists: the named one; else the first that
    /// V4L2 does not stream on its own (not UVC); else, for `backend = "libcamera"`, the first.
    static func pick(from cameras: [LibcameraCameraInfo], backend: CameraBackendSetting, cameraID: String?) -> LibcameraCameraInfo? {
        if let id = cameraID { return cameras.first { $0.id == id } }
        return cameras.first { !$0.isUVC } ?? (backend == .libcamera ? cameras.first : nil)
    }
}
