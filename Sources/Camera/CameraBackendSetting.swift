/// Which library drives the camera (`[camera] backend`, docs/libcamera.md).
public enum CameraBackendSetting: String, Sendable, Hashable, CaseIterable {
    /// V4L2 for a camera that streams on its own (a USB webcam, a V4L2 node with controls);
    /// libcamera for one that needs libcamera's pipeline (a Raspberry Pi Camera Module).
    case auto
    case v4l2
    case libcamera
}

/// The library a camera is driven by, once chosen.
public enum CameraBackendKind: String, Sendable, Hashable {
    case v4l2
    case libcamera
}

extension CameraBackendSetting {
    /// The backend for a camera: `streamsOnItsOwn` is true for a camera a V4L2 capture node
    /// delivers frames from by itself (libcamera's UVC pipeline handler drives such cameras
    /// through the same node), false for a sensor behind an ISP that only libcamera streams.
    /// `libcameraAvailable` false: libcamera is not there (not installed, failed to start),
    /// and V4L2 goes on whatever was asked.
    public func backend(streamsOnItsOwn: Bool, libcameraAvailable: Bool) -> CameraBackendKind {
        guard libcameraAvailable else { return .v4l2 }
        switch self {
        case .v4l2: return .v4l2
        case .libcamera: return .libcamera
        case .auto: return streamsOnItsOwn ? .v4l2 : .libcamera
        }
    }
}
