#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Evdev
import Foundation
import Testing

/// A timelapse through a camera unplug and replug (docs/booth.md#timelapse): vivid unbound
/// from its driver and bound again. The shots it could not take are `missed` lines and
/// counted; after the replug the shots resume on the same schedule.
@Suite(.systemTest, .serialized)
struct BoothUnplugSystemTests {
    @Test(.timeLimit(.minutes(4))) func aTimelapseGoesOnThroughAnUnplugAndCountsWhatItMissed() throws {
        try ReliabilityPhotoTests.withUnbindableVivid { node in
            let daemon = try ReliabilityDaemon(
                config: """
                    [camera]
                    device = "none"
                    capture-device = "\(node)"
                    width = 320
                    height = 240
                    stream = "always"
                    [handlers.primary]
                    timelapse = 0.5
                    long-press = "none"
                    [sound]
                    play = "off"
                    """)
            let keys = try UinputDevice(ReliabilityInputTests.keys("evcapture timelapse shutter"), autorepeat: false)
            defer { keys.destroy() }
            #expect(
                daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == keys.node } }, "\(daemon)")
            func lapse(_ state: String) -> [[String: Any]] { daemon.objects(event: "timelapse").filter { $0["state"] as? String == state } }
            func click() throws {
                try ReliabilityInputTests.press(keys, .volumeDown, 1)
                try ReliabilityInputTests.press(keys, .volumeDown, 0)
            }
            Thread.sleep(forTimeInterval: 1)
            try click()
            #expect(daemon.waitFor { _ in lapse("started").count == 1 }, "\(daemon)")
            let start = try #require(lapse("started").first?["next_time"] as? Double)
            #expect(daemon.waitFor(timeout: .seconds(15)) { _ in lapse("shot").count >= 3 }, "\(daemon)")

            ReliabilityPhotoTests.setBound(false)
            #expect(daemon.waitFor(timeout: .seconds(20)) { _ in lapse("missed").count >= 2 }, "no missed shots while unplugged\n\(daemon)")
            let shotsWhileAway = lapse("shot").count
            ReliabilityPhotoTests.setBound(true)
            #expect(waitUntil(timeout: .seconds(10)) { vividNode() == node }, "vivid came back as \(vividNode() ?? "nothing")")
            #expect(
                daemon.waitFor(timeout: .seconds(30)) { _ in lapse("shot").count >= shotsWhileAway + 3 },
                "no shots after the replug\n\(daemon)")
            try click()
            #expect(daemon.waitFor { _ in lapse("stopped").count == 1 }, "\(daemon)")
            let stopped = try #require(lapse("stopped").first)
            let missed = stopped["missed"] as? Int ?? 0
            let count = stopped["count"] as? Int ?? 0
            #expect(missed >= 2 && count >= 6, "\(stopped)")
            // Every shot taken is nearer its own slot than any other (a frame of another
            // moment is a missed shot, not a photo) ...
            let frames = try lapse("shot").map { try #require($0["frame_time"] as? Double) }
            func offSlot(_ frame: Double) -> Double { abs(frame - (start + ((frame - start) / 0.5).rounded() * 0.5)) }
            for frame in frames { #expect(offSlot(frame) <= 0.25, "frame \(frame) off the schedule from \(start)") }
            // ... and with the stream steady (before the unplug, once it is back), the frame
            // nearest it: within half of vivid's 200 ms frame interval.
            for frame in frames.prefix(3) + frames.suffix(2) {
                #expect(offSlot(frame) <= 0.105, "frame \(frame) off the schedule from \(start): \(frames)")
            }
            // Reported as they happened: the last line's counts are the stop's.
            let last = daemon.objects(event: "timelapse").last { $0["state"] as? String != "stopped" }
            #expect((last?["missed"] as? Int ?? 0) <= missed)
            #expect(daemon.stop() == 0, "\(daemon)")
        }
    }
}
