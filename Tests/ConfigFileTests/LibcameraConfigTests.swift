import Camera
import ConfigFile
import Testing

/// `[camera] backend` and `libcamera-camera` (docs/libcamera.md).
@Suite struct LibcameraConfigTests {
    @Test func theDefaultIsAutoWithNoLibcameraCamera() throws {
        let c = try Config.parse("", file: "empty.toml")
        #expect(c.daemon.cameraBackend == .auto)
        #expect(c.daemon.libcameraCamera == nil)
    }

    @Test(arguments: CameraBackendSetting.allCases)
    func eachBackendParses(_ backend: CameraBackendSetting) throws {
        let c = try Config.parse("[camera]\nbackend = \"\(backend.rawValue)\"\n", file: "c.toml")
        #expect(c.daemon.cameraBackend == backend)
    }

    @Test func aLibcameraCameraIsChosenById() throws {
        let id = "/base/soc/i2c0mux/i2c@1/imx708@1a"
        let c = try Config.parse("[camera]\nbackend = \"libcamera\"\nlibcamera-camera = \"\(id)\"\n", file: "c.toml")
        #expect(c.daemon.cameraBackend == .libcamera)
        #expect(c.daemon.libcameraCamera == id)
    }

    @Test func errorsNameTheFileLineAndKey() {
        ConfigTests.expectError(
            "[camera]\n\nbackend = \"gstreamer\"\n",
            "bad.toml:3: camera.backend must be one of \"auto\", \"v4l2\", \"libcamera\", not \"gstreamer\"")
        ConfigTests.expectError(
            "[camera]\nlibcamera-camera = \"\"\n",
            "bad.toml:2: camera.libcamera-camera must be a libcamera camera id (see `evcapture controls`), not \"\"")
        ConfigTests.expectError(
            "[camera]\nbackend = \"v4l2\"\nlibcamera-camera = \"x\"\n",
            "bad.toml:3: camera.libcamera-camera names a libcamera camera, but camera.backend is \"v4l2\"")
        ConfigTests.expectError("[camera]\nbackend = 3\n", "bad.toml:2: camera.backend must be a string, not 3")
    }

    /// `auto` takes a libcamera camera only when V4L2 gives none: a named node that is not
    /// there yet is still V4L2's (it is waited for).
    @Test func autoLeavesLibcameraAloneWhenV4L2GivesTheCamera() {
        var d = DaemonSettings()
        #expect(!d.v4l2GivesTheCamera(openAtStart: false))
        #expect(d.v4l2GivesTheCamera(openAtStart: true))
        d.camera = .path("/dev/video2")
        #expect(d.v4l2GivesTheCamera(openAtStart: false))
        d.camera = nil  // device = "none"
        #expect(d.v4l2GivesTheCamera(openAtStart: false))
        d.camera = .automatic
        d.captureDevice = "/dev/video0"
        #expect(d.v4l2GivesTheCamera(openAtStart: false))
    }
}
