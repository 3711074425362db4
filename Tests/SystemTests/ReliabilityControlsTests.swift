#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Camera
import Foundation
import LinuxIO
import Logging
import Testing
import V4L2

/// Camera control writes off the input thread (docs/behaviour.md#camera-controls), on the real uvcvideo
/// driver and the fake USB camera: a set on the session's camera returns without waiting
/// for USB, and the camera gets the latest value.
///
/// (A hung camera cannot stall a SET_CUR here: GadgetFS takes its data stage in the
/// kernel. What is measured is that no set waits for the transfer at all; the hung camera,
/// whose GETs wait for uvcvideo's 5 s timeout, is ReliabilityHungCameraTests.)
@Suite(.systemTest, .serialized)
struct ReliabilityControlsTests {
    static let logger = Logger(label: "evcapture.tests.controls")

    @Test(.needsFakeCamera, .timeLimit(.minutes(2))) func controlSetsDoNotWaitForTheCamera() throws {
        let camera = try FakeCamera()
        let node = try camera.start()
        defer { try? camera.stop() }

        // What one synchronous write costs here (QUERY_EXT_CTRL, S_EXT_CTRLS: a USB control
        // transfer, G_EXT_CTRLS), on a handle of its own.
        let device = try V4L2Device(path: node)
        let syncStart = ContinuousClock.now
        for i in 0..<20 { try device.set(.zoomAbsolute, to: Int64(200 + i)) }
        let perSyncSet = (ContinuousClock.now - syncStart) / 20

        let loop = try IOLoop()
        defer { loop.stop() }
        let session = try CameraSession(.init(camera: .path(node)), loop: loop, logger: Self.logger)
        #expect(session.camera.waitForWrites())
        let mark = camera.received().count
        // A fast knob: 1000 sets, as the input thread makes them.
        let start = ContinuousClock.now
        for i in 0..<1000 { try session.camera.set(.zoomAbsolute, to: Int64(100 + (i * 7) % 400)) }
        try session.camera.set(.zoomAbsolute, to: 321)
        let took = ContinuousClock.now - start
        #expect(session.camera.waitForWrites())
        #expect(camera.waitUntilReceived("zoom_absolute", 321), "\(camera.log)")
        let received = try camera.receivedLines(after: mark)
        print(
            "control writes: 1001 sets returned in \(took) (one synchronous set: \(perSyncSet)); the camera received \(received.count) of them, the last \(received.last ?? "-")"
        )
        #expect(took < perSyncSet * 1001 / 4, "1001 sets took \(took); one synchronous set takes \(perSyncSet)")
        #expect(received.count < 1001, "latest value wins: \(received.count) writes")
        #expect(received.last == "zoom_absolute = 321")
        #expect(try session.camera.value(of: .zoomAbsolute) == 321)
        #expect(camera.problems.isEmpty, "\(camera.log)")
    }
}
