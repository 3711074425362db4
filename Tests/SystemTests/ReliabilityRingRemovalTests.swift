#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Evdev
import Foundation
import Testing

/// The capture camera unplugged while the ring streams (docs/behaviour.md#reliability): vivid's platform
/// device unbound (every node goes, as on a USB unplug) with `stream = "always"`, once with
/// only the ring running and once while a long press records. The daemon says
/// `camera-removed`, the ring stops, the video recorded so far is a playable MP4, nothing
/// partial is left, the daemon runs on, and when vivid is back the ring restarts by itself
/// and the next click is a photo.
@Suite(.systemTest, .serialized)
struct ReliabilityRingRemovalTests {
    @Test(.timeLimit(.minutes(4))) func captureCameraRemovedWhileTheRingStreams() throws {
        try ReliabilityPhotoTests.withUnbindableVivid { node in
            let daemon = try ReliabilityDaemon(
                config: """
                    [camera]
                    device = "none"
                    capture-device = "\(node)"
                    width = 320
                    height = 240
                    stream = "always"
                    [capture]
                    hold-threshold = 0.3
                    [sound]
                    play = "off"
                    """)
            let photos = daemon.scratch.url.appendingPathComponent("photos").path
            let keys = try UinputDevice(ReliabilityInputTests.keys("evcapture ring removal shutter"), autorepeat: false)
            defer { keys.destroy() }
            #expect(
                daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == keys.node } }, "\(daemon)")

            /// Whether the daemon holds the capture node open: the ring is streaming.
            func streaming() -> Bool { daemon.openDescriptors().contains { $0.hasSuffix("→ \(node)") } }
            func photoCount() -> Int { daemon.objects(event: "action").filter { $0["action"] as? String == "photo" }.count }
            func removedErrors() -> Int { daemon.objects(event: "error").filter { $0["code"] as? String == "camera-removed" }.count }
            func clickGivesAPhoto(_ what: String) throws {
                let before = photoCount()
                try ReliabilityInputTests.press(keys, .volumeDown, 1)
                try ReliabilityInputTests.press(keys, .volumeDown, 0)
                #expect(daemon.waitFor(timeout: .seconds(20)) { _ in photoCount() > before }, "no photo \(what)\n\(daemon)")
            }
            func unplugAndExpectTheRingToStop(_ what: String) {
                let before = removedErrors()
                ReliabilityPhotoTests.setBound(false)
                #expect(
                    daemon.waitFor(timeout: .seconds(15)) { _ in removedErrors() > before }, "no camera-removed error \(what)\n\(daemon)")
                #expect(
                    pollUntil(timeout: .seconds(5)) { !streaming() }, "the ring still holds \(node) \(what): \(daemon.openDescriptors())")
                #expect(daemon.process.isRunning, "\(daemon)")
            }
            func plugBackAndExpectTheRingToRestart(_ what: String) {
                ReliabilityPhotoTests.setBound(true)
                #expect(pollUntil(timeout: .seconds(10)) { vividNode() == node }, "vivid came back as \(vividNode() ?? "nothing")")
                // By itself: no press, no command.
                #expect(pollUntil(timeout: .seconds(15)) { streaming() }, "the ring did not restart \(what)\n\(daemon)")
            }

            #expect(pollUntil(timeout: .seconds(15)) { streaming() }, "the ring is not streaming at start\n\(daemon)")
            try clickGivesAPhoto("at start")

            // 1. Only the ring runs.
            unplugAndExpectTheRingToStop("while only the ring streamed")
            plugBackAndExpectTheRingToRestart("after the first removal")
            try clickGivesAPhoto("after the first removal")

            // 2. A long press records: its video keeps what was recorded.
            let videosBefore = daemon.objects(event: "action").filter { $0["action"] as? String == "video" }.count
            try ReliabilityInputTests.press(keys, .volumeDown, 1)
            #expect(daemon.waitFor(timeout: .seconds(10)) { $0.contains { $0["action"] as? String == "video-started" } }, "\(daemon)")
            usleep(1_000_000)  // about a second of video
            unplugAndExpectTheRingToStop("while a video recorded")
            try ReliabilityInputTests.press(keys, .volumeDown, 0)
            #expect(
                daemon.waitFor(timeout: .seconds(15)) { objects in
                    objects.filter { $0["action"] as? String == "video" }.count > videosBefore
                }, "the video recorded before the removal was not kept\n\(daemon)")
            let video = daemon.objects(event: "action").last { $0["action"] as? String == "video" }
            #expect(video?["stopped"] as? String == "camera-removed", "the video line does not say why it stopped: \(video ?? [:])")
            plugBackAndExpectTheRingToRestart("after the second removal")
            try clickGivesAPhoto("after the second removal")

            // Every file under a final name is whole; nothing temporary is left.
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: photos)) ?? []).sorted()
            var videos = 0
            for name in files {
                #expect(!name.hasPrefix(".") && !name.hasSuffix(".part"), "a temporary file was left behind: \(name)")
                let path = "\(photos)/\(name)"
                if name.hasSuffix(".mp4") {
                    videos += 1
                    let probe = try run(
                        "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "default=noprint_wrappers=1:nokey=1", path)
                    let frames = Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                    print("ring removal: \(name): \(frames) frames (ffprobe)")
                    #expect(probe.succeeded && frames >= 5, "\(name) is not a playable MP4: \(probe)")
                } else {
                    let data = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
                    #expect(data.prefix(2) == Data([0xFF, 0xD8]) && data.suffix(2) == Data([0xFF, 0xD9]), "\(name) is not a whole JPEG")
                }
            }
            #expect(videos == 1, "\(files)")
            print("ring removal: files \(files), \(removedErrors()) camera-removed errors")
            #expect(daemon.stop() == 0, "\(daemon)")
        }
    }
}
