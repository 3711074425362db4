import EvcaptureTesting
import Foundation
import Testing

/// `evcapture replay FILE --camera DEV` drives a real V4L2 camera's controls as the daemon
/// would: the fake UVC camera behind the real uvcvideo driver receives the zoom values.
@Suite(.systemTest, .serialized)
struct ReplayCameraSystemTests {
    @Test(.needsFakeCamera)
    func replayDrivesTheFakeUVCCamerasZoom() throws {
        let camera = try FakeCamera()
        let node = try camera.start()
        defer { try? camera.stop() }
        let mark = camera.received().count
        let r = try EvcaptureCommand.run(["replay", Fixtures.evemu("rotary-encoder-rel-x"), "--camera", node, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let raws = r.stdout.split(separator: "\n").filter { $0.contains("\"event\":\"control\"") && $0.contains("\"control\":\"zoom\"") }
        // The same detents as on the simulated camera (ControlsReplayTests): 108 first, 116 last.
        #expect(raws.first?.contains("\"raw\":108") == true && raws.last?.contains("\"raw\":116") == true, "\(raws)")
        let zooms = camera.received().dropFirst(mark).filter { $0.control == "zoom_absolute" }.map(\.value)
        #expect(zooms.first == 108 && zooms.last == 116, "the camera received \(zooms)")
        #expect(zooms.count == raws.count, "\(zooms) for \(raws.count) control lines")
    }
}
