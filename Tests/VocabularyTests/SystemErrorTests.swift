import Glibc
import Testing
import Vocabulary

/// docs/architecture.md#errors-and-habits: one error shape for what the system refuses, and
/// one errno classifier.
@Suite struct SystemErrorTests {
    /// Every errno the classifier names, and one it does not (EIO, and 0: no errno at all).
    @Test(arguments: [
        (EACCES, "permission denied"), (EPERM, "permission denied"), (EROFS, "permission denied"),
        (ENOENT, "not found"), (ENODEV, "device removed"), (ENXIO, "device removed"), (EBUSY, "busy"),
        (ENOSPC, "no space left"), (EDQUOT, "no space left"), (EFBIG, "no space left"), (ETIMEDOUT, "timed out"),
        (EIO, "failed"), (0, "failed"),
    ])
    func anErrnoIsClassifiedOnce(_ errno: Int32, _ code: String) {
        #expect(SystemError.Code(errno: errno).rawValue == code)
        #expect(SystemError(errno: errno).code == SystemError.Code(errno: errno))
    }

    /// Only a node that is not there, or a device that went away, is a device gone.
    @Test func aDeviceIsGoneOnlyWhenItIsNotThereOrWentAway() {
        #expect(SystemError(errno: ENOENT).isDeviceGone)
        #expect(SystemError(errno: ENODEV).isDeviceGone)
        #expect(!SystemError(errno: EBUSY).isDeviceGone)
        #expect(!SystemError(errno: EIO).isDeviceGone)
    }

    /// What a person reads: the errno's words when the code only restates it, the code and the
    /// words when the code says more, the code alone without an errno, the context alone for
    /// a bare failure, and a code's hint last.
    @Test func theDescriptionSaysEachThingOnce() {
        #expect("\(SystemError(errno: EBUSY, context: "opening /dev/video0"))" == "opening /dev/video0: device or resource busy")
        #expect(
            "\(SystemError(code: .deviceRemoved, errno: EIO, context: "reading /dev/input/event3"))"
                == "reading /dev/input/event3: device removed (input/output error)")
        #expect("\(SystemError(code: .timedOut, context: "waiting for a frame"))" == "waiting for a frame: timed out")
        #expect("\(SystemError(code: .failed, context: "no camera"))" == "no camera")
        #expect("\(SystemError(code: .busy))" == "busy")
        let bandwidth = "\(SystemError(code: .noBandwidth, errno: ENOSPC, context: "starting the stream"))"
        #expect(
            bandwidth.hasPrefix("starting the stream: not enough USB bandwidth (no space left on device): the USB bus has no bandwidth"))
        #expect(SystemError(errno: EBUSY).doing("grabbing").context == "grabbing")
        #expect(SystemError(errno: EBUSY).doing("grabbing").errno == EBUSY)
    }
}
