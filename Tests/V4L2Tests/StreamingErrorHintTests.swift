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
                == "VIDIOC_STREAMON on /dev/video0: not enough USB bandwidth (\(String(cString: strerror(e)))): the USB bus has no bandwidth left for this format and size (another camera or a busy device on the same bus, or uncompressed YUYV at a high resolution): try a lower resolution ([camera] width and height), a camera that offers MJPEG, or another USB port (a bus of its own)"
        )
    }

    @Test func enomemElsewhereIsNotABandwidthProblem() {
        #expect(StreamingError.fromErrno(ENOMEM, "mmap of buffer 0 of /dev/video0").code == .system)
        #expect(StreamingError.fromErrno(ENOMEM, "mmap of buffer 0 of /dev/video0").hint == nil)
    }

    @Test func busyPermissionAndFormatHaveHints() {
        let busy = StreamingError.fromErrno(EBUSY, "VIDIOC_S_FMT MJPG on /dev/video0")
        #expect(
            busy.description.hasSuffix(
                "busy (\(String(cString: strerror(EBUSY)))): another program is using the camera: close it (fuser -v /dev/video* shows which), or set [camera] capture-device to another camera"
            ))
        let denied = StreamingError.fromErrno(EACCES, "opening /dev/video0")
        #expect(denied.code == .permissionDenied && denied.description.contains("join the video group (sudo usermod -aG video $USER"))
        let format = StreamingError(code: .noUsableFormat, context: "/dev/video0 offers only [GREY]; MJPEG, JPEG or YUYV needed")
        #expect(format.description.hasSuffix("v4l2-ctl --list-formats-ext -d DEVICE lists what the camera offers"))
    }
}
