import Foundation
import LibcameraCamera
import Testing

#if canImport(Glibc)
import Glibc
import EvcaptureTesting
#endif

/// libcamera's own UVC pipeline handler on the fake UVC camera behind the kernel's real
/// uvcvideo driver (docs/libcamera.md). Debian's libcamera 0.0.3 registers no camera for it:
/// the handler names a UVC camera after the firmware node (ACPI or device tree) of the USB
/// controller above it, and dummy_hcd, the fake camera's virtual controller, has none. These
/// tests assert exactly that, so they fail when it changes (a libcamera that lists the camera,
/// or a lab whose camera hangs off a controller with a firmware node): then docs/libcamera.md
/// and these tests change with it. Streaming through libcamera is tested on vimc
/// (``LibcameraVimcSystemTests``).
@Suite(.needsFakeCamera, .serialized, .timeLimit(.minutes(2)))
struct LibcameraSystemTests {
    let camera: FakeCamera

    init() throws {
        camera = try FakeCamera()
        try camera.start()
    }

    /// The fake camera's media device, as uvcvideo made it (`/sys/bus/media/devices/mediaN`).
    func uvcMediaDevice() -> String? {
        let base = "/sys/bus/media/devices"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        return entries.sorted().first { entry in
            let model = try? String(contentsOfFile: "\(base)/\(entry)/model", encoding: .utf8)
            return model?.hasPrefix(FakeCamera.cardName) == true
        }
    }

    @Test func theUVCPipelineHandlerRegistersNoCameraForTheFakeCameraOnDummyHCD() throws {
        // The kernel side is complete: uvcvideo bound and made the media device the
        // handler matches on.
        let media = try #require(uvcMediaDevice(), "uvcvideo made no media device for the fake camera")

        let lc = try Libcamera.start().get()
        #expect(lc.version.contains(Libcamera.compiledVersion), "running \(lc.version)")
        // The manager enumerates the media devices present when it starts: the list is final.
        let listed = lc.cameras()
        #expect(
            !listed.contains { $0.isUVC || $0.id.hasSuffix("\(FakeCamera.usbVendor):\(FakeCamera.usbProduct)") },
            "libcamera now lists the fake camera (update docs/libcamera.md and this test): \(listed)")

        // Why, in libcamera's own words (its log, through its own tool).
        var environment = ProcessInfo.processInfo.environment
        environment["LIBCAMERA_LOG_LEVELS"] = "*:ERROR"
        let cam = try run(["cam", "-l"], environment: environment)
        #expect(cam.succeeded, "\(cam)")
        #expect(cam.stderr.contains("Can not find controller ID"), "\(media): \(cam)")
        #expect(!cam.stdout.contains("\(FakeCamera.usbVendor):\(FakeCamera.usbProduct)"), "\(cam)")
    }

    @Test func anUnpluggedFakeCameraChangesNothingInTheList() throws {
        let lc = try Libcamera.start().get()
        let before = lc.cameras().map(\.id)
        try camera.stop()
        #expect(pollUntil(timeout: .seconds(10)) { uvcMediaDevice() == nil })
        // libcamera saw the media device go (its hotplug path ran) and still lists the same.
        #expect(lc.cameras().map(\.id) == before)
    }
}

func clockMonotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
