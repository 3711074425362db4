#if canImport(Glibc)
import Glibc
#endif
import Evdev
import Foundation
import Synchronization
import Testing

/// The daemon while its camera goes away under it: the real uvcvideo driver and the fake
/// USB camera, unplugged while a slider moves.
@Suite(.systemTest, .serialized)
struct ReliabilityCameraTests {
    /// A dial (REL_DIAL + BTN_0) turned continuously while the camera is unplugged and
    /// plugged back: no crash; the session stops (controls disabled) and resumes; the
    /// slider drives the camera again afterwards.
    @Test(.needsFakeCamera, .timeLimit(.minutes(3))) func cameraUnpluggedWhileASliderMoves() throws {
        let camera = try FakeCamera()
        let node = try camera.start()
        defer { try? camera.stop() }
        let daemon = try ReliabilityDaemon(config: reliabilityConfig(camera: node))
        let dial = try UinputDevice(
            DeviceDescription(name: "evcapture reliability dial", bus: .usb, vendor: 0x1209, product: 0x0d1a, codes: [.synReport, .relDial, .btn0]))
        defer { dial.destroy() }
        #expect(daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == dial.node } }, "\(daemon)")

        // the slider turns every 20 ms on its own thread for the whole test
        let turning = Atomic<Bool>(true)
        let steps = Atomic<Int>(0)
        let turner = Thread {
            while turning.load(ordering: .relaxed) {
                // back and forth: the value never sticks at an end of the range
                let n = steps.add(1, ordering: .relaxed).newValue
                try? dial.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .relDial, n % 2 == 0 ? 1 : -1)])
                usleep(20_000)
            }
        }
        turner.start()
        defer { turning.store(false, ordering: .relaxed) }

        #expect(daemon.waitFor { _ in daemon.objects(event: "control").count >= 3 }, "the slider does not drive the camera\n\(daemon)")
        #expect(waitUntil(timeout: .seconds(5)) { camera.received().contains { $0.control == "zoom_absolute" } }, "\(camera.log)")

        try camera.stop()  // unplugged mid-slide
        #expect(daemon.waitFor(timeout: .seconds(15)) { objects in
            objects.contains { $0["event"] as? String == "session" && $0["state"] as? String == "stopped" }
        }, "the session did not stop when the camera went away\n\(daemon)")
        let stepsWhileAway = steps.load(ordering: .relaxed)
        usleep(500_000)  // keep turning with no camera
        #expect(steps.load(ordering: .relaxed) > stepsWhileAway)
        #expect(daemon.process.isRunning, "\(daemon)")

        try camera.start()  // plugged back (a new USB device, maybe a new /dev/videoN)
        #expect(daemon.waitFor(timeout: .seconds(20)) { objects in
            objects.filter { $0["event"] as? String == "session" && $0["state"] as? String == "started" }.count >= 2
        }, "the session did not resume\n\(daemon)")
        // the slider reaches the new camera
        #expect(waitUntil(timeout: .seconds(10)) { camera.received().contains { $0.control == "zoom_absolute" } }, "\(camera.log)\n\(daemon)")
        turning.store(false, ordering: .relaxed)
        #expect(daemon.process.isRunning)
        #expect(daemon.stop() == 0, "\(daemon)")
    }
}
