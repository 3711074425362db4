import Camera
import Testing

@testable import LibcameraCamera

/// The daemon's choice at start, and the camera manager on this machine. The only unit tests
/// that start libcamera (one manager per process): serialized.
@Suite(.serialized) struct LibcameraStartupTests {
    func counting(_ started: UnsafeMutablePointer<Int>) -> () -> Result<Libcamera, LibcameraError> {
        {
            started.pointee += 1
            return .failure(LibcameraError(code: -2, message: "not here"))
        }
    }

    @Test func nothingIsLoadedUnlessLibcameraIsAskedForOrV4L2HasNoCamera() {
        var started = 0
        withUnsafeMutablePointer(to: &started) { p in
            #expect(LibcameraStartup.choose(backend: .v4l2, cameraID: nil, v4l2CameraFound: false, libcamera: counting(p)).line == nil)
            #expect(LibcameraStartup.choose(backend: .auto, cameraID: nil, v4l2CameraFound: true, libcamera: counting(p)).line == nil)
        }
        #expect(started == 0)
        withUnsafeMutablePointer(to: &started) { p in
            // auto without a V4L2 camera: libcamera is asked (and here is missing: one line).
            _ = LibcameraStartup.choose(backend: .auto, cameraID: nil, v4l2CameraFound: false, libcamera: counting(p))
            // a named libcamera camera is looked for even when V4L2 has one
            _ = LibcameraStartup.choose(backend: .auto, cameraID: "x", v4l2CameraFound: true, libcamera: counting(p))
        }
        #expect(started == 2)
    }

    @Test func aLibcameraThatCannotStartIsOneLineAndV4L2GoesOn() {
        let (line, choice) = LibcameraStartup.choose(backend: .libcamera, cameraID: "x", v4l2CameraFound: false) {
            .failure(
                LibcameraError(
                    code: -2, message: "cannot load /usr/lib/evcapture/libevcapture-libcamera.so: libcamera.so.0.0.3: cannot open"))
        }
        #expect(
            line == "libcamera: not available (cannot load /usr/lib/evcapture/libevcapture-libcamera.so: libcamera.so.0.0.3: cannot open); "
                + "the V4L2 backend goes on")
        #expect(choice == nil)
    }

    @Test func theCameraTakenIsTheNamedOneElseOneV4L2DoesNotStreamOnItsOwn() {
        let uvc = LibcameraCameraInfo(id: "\\_SB_.PCI0-2.1:1.0-0c45:6366", model: "USB camera", location: 2, isUVC: true)
        let pi = LibcameraCameraInfo(id: "/base/soc/i2c0mux/i2c@1/imx708@1a", model: "imx708", location: 1, isUVC: false)
        #expect(LibcameraStartup.pick(from: [uvc, pi], backend: .auto, cameraID: nil) == pi)
        #expect(LibcameraStartup.pick(from: [uvc, pi], backend: .libcamera, cameraID: nil) == pi)
        #expect(LibcameraStartup.pick(from: [uvc, pi], backend: .auto, cameraID: uvc.id) == uvc)
        #expect(LibcameraStartup.pick(from: [uvc, pi], backend: .libcamera, cameraID: "other") == nil)
        // Only a webcam: auto leaves it to V4L2; "libcamera" was asked for, and takes it.
        #expect(LibcameraStartup.pick(from: [uvc], backend: .auto, cameraID: nil) == nil)
        #expect(LibcameraStartup.pick(from: [uvc], backend: .libcamera, cameraID: nil) == uvc)
        #expect(LibcameraStartup.pick(from: [], backend: .libcamera, cameraID: nil) == nil)
    }

    @Test func aCameraLibcameraDoesNotListIsNamed() {
        let (line, choice) = LibcameraStartup.choose(
            backend: .auto, cameraID: "no-such-camera", v4l2CameraFound: true, libcamera: { Libcamera.start() })
        #expect(
            line?.hasPrefix("libcamera: no camera \"no-such-camera\" (camera.libcamera-camera; libcamera lists: ") == true,
            "\(line ?? "nil")")
        #expect(choice == nil)
    }

    @Test func oneManagerPerProcessAndNoCrashOnASecond() throws {
        let first = try Libcamera.start().get()
        #expect(first.version.contains(Libcamera.compiledVersion), "\(first.version)")
        guard case .failure(let error) = Libcamera.start() else {
            Issue.record("a second camera manager started")
            return
        }
        #expect(error.code == -16 && error.message.contains("already running"), "\(error)")
        #expect(throws: LibcameraError.self) { try first.controls(of: "no such camera") }
        #expect(throws: LibcameraError.self) { _ = try LibcameraStream(first, id: "no such camera") }
        #expect(LibcameraReport.text(.success(first)).hasPrefix("libcamera v"))
    }
}
