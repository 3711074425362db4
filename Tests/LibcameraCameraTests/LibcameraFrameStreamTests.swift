import Vocabulary
import Testing
import V4L2

@testable import LibcameraCamera

/// The libcamera camera behind the capture stream: which format it is asked for, how its
/// errors reach the ring, and the controls held for its stream (docs/libcamera.md).
@Suite struct LibcameraFrameStreamTests {
    let mjpeg = fourcc("MJPG"), yuyv = fourcc("YUYV"), nv12 = fourcc("NV12")

    func formats(_ code: UInt32, _ sizes: [(Int, Int)]) -> [LibcameraFormat] {
        sizes.map { LibcameraFormat(fourcc: code, width: $0.0, height: $0.1) }
    }

    @Test func mjpegElseYUYVAtTheAskedSizeElseTheLargestUpTo1080p() {
        let both = formats(yuyv, [(640, 480), (1920, 1080)]) + formats(mjpeg, [(640, 480), (1280, 720), (3840, 2160)])
        #expect(LibcameraFrameStream.choose(both, width: 640, height: 480) == LibcameraFormat(fourcc: mjpeg, width: 640, height: 480))
        #expect(LibcameraFrameStream.choose(both, width: nil, height: nil) == LibcameraFormat(fourcc: mjpeg, width: 1280, height: 720))
        // A size not listed is asked for as such: libcamera adjusts it (its stream says what it got).
        #expect(LibcameraFrameStream.choose(both, width: 800, height: 600) == LibcameraFormat(fourcc: mjpeg, width: 800, height: 600))
        let raw = formats(nv12, [(1920, 1080)]) + formats(yuyv, [(4056, 3040), (1920, 1080), (640, 480)])
        #expect(LibcameraFrameStream.choose(raw, width: nil, height: nil) == LibcameraFormat(fourcc: yuyv, width: 1920, height: 1080))
        // Nothing at or under 1080p: the smallest.
        let large = formats(yuyv, [(4056, 3040), (2028, 1520)])
        #expect(LibcameraFrameStream.choose(large, width: nil, height: nil) == LibcameraFormat(fourcc: yuyv, width: 2028, height: 1520))
        // 24-bit RGB (libcamera's vimc camera offers only that) when neither is offered.
        let rgb = formats(fourcc("BG24"), [(640, 480)]) + formats(fourcc("RG24"), [(640, 480)]) + formats(nv12, [(640, 480)])
        #expect(
            LibcameraFrameStream.choose(rgb, width: nil, height: nil) == LibcameraFormat(fourcc: fourcc("RG24"), width: 640, height: 480))
        #expect(LibcameraFrameStream.choose(rgb + formats(yuyv, [(320, 240)]), width: nil, height: nil)?.fourcc == yuyv)
        // None of them: none (NV12 in one plane of libcamera's buffer is not taken from libcamera yet).
        #expect(LibcameraFrameStream.choose(formats(nv12, [(1920, 1080)]), width: nil, height: nil) == nil)
        #expect(LibcameraFrameStream.choose([], width: 640, height: 480) == nil)
    }

    /// libcamera's DRM names of packed RGB are the byte order of a little-endian word: its
    /// RGB888 is B, G, R in memory, V4L2's BGR3 (the JPEG and H.264 paths read it as such).
    @Test func libcamerasRGBIsPassedOnUnderItsV4L2Name() {
        #expect(LibcameraFrameStream.pixelFormat(ofLibcamera: fourcc("RG24")) == .bgr24)
        #expect(LibcameraFrameStream.pixelFormat(ofLibcamera: fourcc("BG24")) == .rgb24)
        #expect(LibcameraFrameStream.pixelFormat(ofLibcamera: fourcc("MJPG")) == .mjpeg)
        #expect(LibcameraFrameStream.pixelFormat(ofLibcamera: fourcc("YUYV")) == .yuyv)
    }

    @Test func libcamerasCodesBecomeTheRingsOwn() {
        let cases: [(Int32, StreamingError.Code)] = [
            (-19, .deviceRemoved), (-110, .timedOut), (-16, .busy), (-13, .permissionDenied), (-5, .failed), (-1, .failed),
        ]
        for (code, expected) in cases {
            let error = LibcameraFrameStream.streamingError(LibcameraError(code: code, message: "m"), "libcamera camera c")
            #expect(error.code == expected, "\(code)")
            #expect(error.context == "libcamera camera c: m")
        }
        // An unplugged camera ends a video with the code the ring acts on, not as a failure of the disk.
        #expect(
            ActionError.recording(.camera(LibcameraFrameStream.streamingError(LibcameraError(code: -19, message: "gone"), "c"))).code
                == "camera-removed")
    }

    static func control(_ id: UInt32, _ name: String, _ kind: LibcameraControl.Kind, values: [Int32] = []) -> LibcameraControl {
        LibcameraControl(
            id: id, name: name, kind: kind, minimum: 0, maximum: 0, defaultValue: 0, minimumRect: nil, maximumRect: nil, values: values)
    }

    @Test func autofocusNeedsAfModeWithAutoAndAfTrigger() {
        let mode = Self.control(1, "AfMode", .int32, values: [0, 1, 2])
        let trigger = Self.control(2, "AfTrigger", .int32, values: [0, 1])
        #expect(LibcameraLiveControls(controls: [mode, trigger]).hasAutofocus)
        #expect(!LibcameraLiveControls(controls: [mode]).hasAutofocus)
        #expect(!LibcameraLiveControls(controls: [trigger]).hasAutofocus)
        #expect(!LibcameraLiveControls(controls: [Self.control(1, "AfMode", .int32, values: [0]), trigger]).hasAutofocus)
        #expect(!LibcameraLiveControls(controls: []).hasAutofocus)
        // No stream runs: no cycle started (the press's frame comes from a stream that runs).
        #expect(!LibcameraLiveControls(controls: [mode, trigger]).startAutofocus())
    }

    @Test func valuesSetWhileNoStreamRunsAreHeldNotRefused() throws {
        let live = LibcameraLiveControls(controls: [])
        let camera = LibcameraControls(
            identity: "imx708", controls: [LibcameraControlsTests.crop, LibcameraControlsTests.ev],
            cropMaximum: LibcameraControlsTests.maximum, sink: live)
        #expect(try camera.set(.zoomAbsolute, to: 200) == 200)
        #expect(try camera.set(.autoExposureBias, to: 0) == 0)
        #expect(try camera.value(of: .zoomAbsolute) == 200)
    }
}
