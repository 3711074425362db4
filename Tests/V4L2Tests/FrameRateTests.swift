import Testing
@testable import V4L2

/// `[camera] fps` as `VIDIOC_S_PARM` asks for it: the time per frame as a reduced fraction.
@Suite struct FrameRateTests {
    @Test(arguments: [
        (25.0, UInt32(1), UInt32(25)), (30, 1, 30), (1, 1, 1), (240, 1, 240),
        (7.5, 2, 15), (29.97, 100, 2997), (59.94, 50, 2997), (12.5, 2, 25),
    ])
    func timePerFrameIsOneOverTheRate(fps: Double, numerator: UInt32, denominator: UInt32) {
        let t = VideoCaptureStream.timePerFrame(fps)
        #expect(t.numerator == numerator && t.denominator == denominator, "\(fps) fps → \(t)")
    }

    @Test func aRateTheDriverCannotGiveSaysWhatToDo() {
        let e = StreamingError(
            code: .frameRateNotAvailable,
            context: "capture stream of /dev/video0 at 640×360: asked for 240 fps, the driver gives 60 fps at this size")
        #expect(
            e.description.hasSuffix(
                "v4l2-ctl --list-formats-ext -d DEVICE lists the frame rates of each size; [camera] fps takes one of them, or leave it out")
        )
    }
}
