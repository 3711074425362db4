import EvcaptureTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Proves that the system-test lab is real: the kernel devices the other system tests rely
/// on exist, and the fake camera's controls travel through the real uvcvideo driver.
@Suite(.systemTest, .serialized)
struct HarnessTests {
    @Test func uinputIsWritable() throws {
        let fd = open("/dev/uinput", O_RDWR | O_NONBLOCK)
        #expect(fd >= 0, "open /dev/uinput: \(String(cString: strerror(errno)))")
        if fd >= 0 { close(fd) }
    }

    @Test func udevdIsRunning() throws {
        // the guest's udevd keeps its database in /run/udev, bound into the host tree
        #expect(FileManager.default.fileExists(atPath: "/run/udev/control"), "no udevd control socket")
        let info = try run("udevadm", "info", "--query=property", "--name=/dev/uinput")
        #expect(info.succeeded, "\(info)")
    }

    @Test func vividCaptureNodeExists() throws {
        let node = try #require(vividNode(), "no vivid-000-vid-cap in /sys/class/video4linux")
        let info = try run("v4l2-ctl", "-d", node, "--info")
        #expect(info.succeeded, "\(info)")
        #expect(info.stdout.contains("Driver name      : vivid"), "\(info.stdout)")
    }

    @Test(.needsFakeCamera) func fakeCameraControlsReachTheCameraThroughUvcvideo() throws {
        let camera = try FakeCamera()
        let node = try camera.start()

        let info = try run("v4l2-ctl", "-d", node, "--info")
        #expect(info.stdout.contains("uvcvideo"), "not bound to uvcvideo:\n\(info.stdout)")
        #expect(info.stdout.contains(FakeCamera.cardName), "\(info.stdout)")

        let controls = try run("v4l2-ctl", "-d", node, "--list-ctrls")
        #expect(controls.stdout.contains("zoom_absolute"), "\(controls.stdout)")
        #expect(controls.stdout.contains("min=100 max=500"), "\(controls.stdout)")

        let set = try run("v4l2-ctl", "-d", node, "--set-ctrl", "zoom_absolute=300")
        #expect(set.succeeded, "\(set)")
        #expect(camera.waitUntilReceived("zoom_absolute", 300), "camera log:\n\(camera.log)")

        let get = try run("v4l2-ctl", "-d", node, "--get-ctrl", "zoom_absolute")
        #expect(get.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "zoom_absolute: 300")

        let manual = try run(
            "v4l2-ctl", "-d", node, "--set-ctrl", "auto_exposure=1", "--set-ctrl", "exposure_time_absolute=500")
        #expect(manual.succeeded, "\(manual)")
        #expect(camera.waitUntilReceived("auto_exposure", 1), "camera log:\n\(camera.log)")
        #expect(camera.waitUntilReceived("exposure_time_absolute", 500), "camera log:\n\(camera.log)")

        let brightness = try run("v4l2-ctl", "-d", node, "--set-ctrl", "brightness=-10")
        #expect(brightness.succeeded, "\(brightness)")
        #expect(camera.waitUntilReceived("brightness", -10), "camera log:\n\(camera.log)")

        #expect(camera.problems.isEmpty, "camera log:\n\(camera.log)")

        try camera.stop()
        #expect(FakeCamera.currentNode() == nil)
        #expect(!FileManager.default.fileExists(atPath: node), "\(node) still exists after the unplug")
    }

    @Test(.needsFakeCamera) func fakeCameraCanBeReplugged() throws {
        let camera = try FakeCamera()
        let first = try camera.start()
        try camera.stop()
        #expect(FakeCamera.currentNode() == nil, "the node survived the unplug")

        let second = try camera.start()
        #expect(FileManager.default.fileExists(atPath: second))
        // a fresh camera: its log starts empty and it answers again
        #expect(camera.received().isEmpty)
        let set = try run("v4l2-ctl", "-d", second, "--set-ctrl", "zoom_absolute=250")
        #expect(set.succeeded, "\(set)")
        #expect(camera.waitUntilReceived("zoom_absolute", 250), "camera log:\n\(camera.log)")
        #expect(!camera.received().contains { $0.control == "zoom_absolute" && $0.value == 300 })
        try camera.stop()
        _ = first
    }
}
