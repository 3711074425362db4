#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import V4L2

/// Camera errors say what a person can do about them (docs/troubleshooting.md#camera-errors).
@Suite struct StreamingErrorHintTests {
    /// uvcvideo's "no bandwidth" (ENOSPC), and ENOMEM as the Raspberry Pi's USB host gives it.
    @Test(arguments: [ENOSPC, ENOMEM])
    func noBandwidthOnStreamOnSaysWhatToTry(errno e: Int32) {
        let error = StreamingError.fromErrno(e, "VIDIOC_STREAMON on /dev/video0")
        #expect(error.code == .noBandwidth)
        #expect(
            error.description
                == "VIDIOC_STREAMON on /dev/video0: not enough USB bandwidth (\(String(cString: strerror(e)).lowercased())): the USB bus has no bandwidth left for this format and size (another camera or a busy device on the same bus, or uncompressed YUYV at a high resolution): try a lower resolution ([camera] width and height), a camera that offers MJPEG, or another USB port (a bus of its own)"
        )
    }

    @Test func enomemElsewhereIsNotABandwidthProblem() {
        #expect(StreamingError.fromErrno(ENOMEM, "mmap of buffer 0 of /dev/video0").code == .failed)
        #expect(StreamingError.fromErrno(ENOMEM, "mmap of buffer 0 of /dev/video0").hint == nil)
    }

    /// The one error shape prints the code only where it says more than the errno does.
    @Test func theCodeIsPrintedOnlyWhereItAddsToTheErrno() {
        let gone = StreamingError.fromErrno(ENODEV, "VIDIOC_DQBUF on /dev/video0")
        #expect(gone.code == .deviceRemoved && gone.isDeviceGone)
        #expect(gone.description == "VIDIOC_DQBUF on /dev/video0: \(String(cString: strerror(ENODEV)).lowercased())")
        // ENOENT while streaming is the camera gone too, not a node to look for
        #expect(StreamingError.fromErrno(ENOENT, "opening /dev/video9").code == .deviceRemoved)
        let timeout = StreamingError(code: .timedOut, context: "waiting for a frame from /dev/video0 (2 s)")
        #expect(timeout.description == "waiting for a frame from /dev/video0 (2 s): timed out")
        #expect(StreamingError(code: .failed, context: "stream stopped").description == "stream stopped")
    }

    @Test func busyPermissionAndFormatHaveHints() {
        let busy = StreamingError.fromErrno(EBUSY, "VIDIOC_S_FMT MJPG on /dev/video0")
        #expect(
            busy.description.hasSuffix(
                "/dev/video0: \(String(cString: strerror(EBUSY)).lowercased()): another program is using the camera: close it (fuser -v /dev/video* shows which), or set [camera] capture-device to another camera"
            ))
        let denied = StreamingError.fromErrno(EACCES, "opening /dev/video0")
        #expect(denied.code == .permissionDenied && denied.description.contains("join the video group (sudo usermod -aG video $USER"))
        let format = StreamingError(
            code: .noUsableFormat, context: "/dev/video0 offers only [GREY]; one of [MJPG, JPEG, YUYV, YU12, NV12, RGB3, BGR3] needed")
        #expect(format.description.hasSuffix("v4l2-ctl --list-formats-ext -d DEVICE lists what the camera offers"))
        #expect(format.description.contains("evcapture takes one of MJPG, JPEG, YUYV, YU12, NV12, RGB3, BGR3; "))
    }
}
