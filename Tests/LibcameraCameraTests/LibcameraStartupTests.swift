import Camera
import Testing

@testable import LibcameraCamera

/// The daemon's start-up line, and the camera manager on this machine. The only unit tests
/// that start libcamera (one manager per process): serialized.
@Suite(.serialized) struct LibcameraStartupTests {
    @Test func nothingIsStartedUnlessLibcameraIsAskedFor() {
        var started = 0
        let start: () -> Result<Libcamera, LibcameraError> = {
            started += 1
            return .failure(LibcameraError(code: -2, message: "not here"))
        }
        #expect(LibcameraStartup.line(backend: .v4l2, cameraID: nil, libcamera: start) == nil)
        #expect(LibcameraStartup.line(backend: .auto, cameraID: nil, libcamera: start) == nil)
        #expect(started == 0)
    }

    @Test func aLibcameraThatCannotStartIsOneLineAndV4L2GoesOn() {
        let line = LibcameraStartup.line(backend: .libcamera, cameraID: "x") {
            .failure(LibcameraError(code: -2, message: "starting libcamera's camera manager: No such file or directory"))
        }
        #expect(
            line == "libcamera: not available (starting libcamera's camera manager: No such file or directory); "
                + "the V4L2 backend goes on")
    }

    @Test func aCameraLibcameraDoesNotListIsNamed() {
        let line = LibcameraStartup.line(backend: .auto, cameraID: "no-such-camera", libcamera: Libcamera.start)
        #expect(line?.hasPrefix("libcamera: no camera \"no-such-camera\" (camera.libcamera-camera; libcamera lists: ") == true, "\(line ?? "nil")")
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
