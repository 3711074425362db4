// The V4L2 stream's failures: its codes on the one error shape, the errno classifier for
// streaming calls, and what a person can do about each.
#if canImport(Glibc)
import Glibc
#endif
import Vocabulary

/// Why a stream could not deliver frames: the one error shape, ``SystemError``
/// (docs/architecture.md#errors-and-habits), under this layer's name, with the codes below,
/// the floor's `.noUsableFormat`, `.noBandwidth` and `.frameRateNotAvailable` (a recording's
/// error code names them) and the shared `.deviceRemoved`, `.notFound`, `.timedOut`,
/// `.failed`. The daemon reports each as an `error` event.
public typealias StreamingError = SystemError

extension SystemError.Code {
    /// `EBUSY` on a camera: another program is streaming from it (equal to `.busy`).
    static let cameraBusy = SystemError.Code(
        "busy",
        hint: "another program is using the camera: close it (fuser -v /dev/video* shows which), "
            + "or set [camera] capture-device to another camera")
    /// EACCES/EPERM on a camera (equal to `.permissionDenied`).
    static let cameraPermissionDenied = SystemError.Code(
        "permission denied",
        hint: "this user may not open the camera: join the video group (sudo usermod -aG video $USER, then log in again) "
            + "or install udev-rules/70-evcapture.rules")
    /// The node is not a streaming video capture device (e.g. a metadata node).
    static let notACaptureDevice = SystemError.Code(
        "not a capture device",
        hint: "a camera often has several /dev/video nodes and only one of them captures: "
            + "v4l2-ctl --list-devices shows them; set [camera] capture-device")
}

extension SystemError {
    /// Classifies an errno from a V4L2 streaming call: the shared classifier, with the
    /// camera's own wording for busy and permission, and the USB bandwidth case.
    static func fromErrno(_ e: Int32, _ context: String) -> StreamingError {
        var code = Code(errno: e)
        switch code {
        case .busy: code = .cameraBusy
        case .permissionDenied: code = .cameraPermissionDenied
        // ENOENT while streaming or on open: the camera is gone either way.
        case .notFound: code = .deviceRemoved
        default: break
        }
        // uvcvideo answers ENOSPC when no alternate setting fits the bus's free bandwidth;
        // some host controllers (the Raspberry Pi's dwc_otg among them) ENOMEM for the same.
        if (e == ENOSPC || e == ENOMEM) && context.hasPrefix("VIDIOC_STREAMON") { code = .noBandwidth }
        return StreamingError(code: code, errno: e, context: context)
    }

    /// What a person can do about it, for the failures that have a usual cause.
    public var hint: String? { code.hint }
}
