#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing
import Recording

/// Digital zoom (docs/behaviour.md#controls) on vivid, which has no zoom control: the knob
/// still zooms, digitally; control lines say so, and a photo at 2× is the centre half of the
/// frame.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct DigitalZoomSystemTests {
    @Test(.enabled(if: vividNode() != nil, "needs vivid (vivid-000-vid-cap)"))
    func aPhotoAtTwoTimesIsTheCentreHalfOfTheFrame() throws {
        let vivid = try #require(vividNode())
        let scratch = try DaemonScratch("digitalzoom")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "\(vivid)"
            width = 320
            height = 240

            [output]
            directory = "\(scratch.output)"

            [controls]
            order = ["zoom"]
            steps-per-range = 3     # one detent: 1× → 2×
            """)
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let knob = try fixtureDevice("rotary-encoder-rel-x")
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")
        try #require(daemon.waitFor(DaemonLines.deviceAdded(knob.node)) != nil, "\(daemon.transcript)")

        func photo() throws -> (press: Int, file: String) {
            let from = daemon.objects.count
            try keys.click(.volumeDown)
            let ended = try #require(daemon.waitFor(from: from, DaemonLines.capture("ended", node: keys.node)), "\(daemon.transcript)")
            let press = try #require(ended.object.int("press"))
            let line = try #require(
                daemon.waitFor(timeout: .seconds(30), DaemonLines.action("photo", press: press)), "\(daemon.transcript)")
            return (press, try #require(line.object.string("file")))
        }
        let whole = try photo()
        try knob.move(.relX, by: 1)
        let zoomLine = try #require(
            daemon.waitFor { $0.event == "control" && $0.string("control") == "zoom" && ($0["value"] as? Double ?? 0) >= 1.99 },
            "\(daemon.transcript)")
        Thread.sleep(forTimeInterval: 0.3)  // a frame or two after the zoom
        #expect(zoomLine.object["digital"] as? Bool == true, "\(zoomLine.object)")
        let zoomed = try photo()

        let a = try JPEGCrop.grey(Array(try Data(contentsOf: URL(fileURLWithPath: whole.file))))
        let b = try JPEGCrop.grey(Array(try Data(contentsOf: URL(fileURLWithPath: zoomed.file))))
        // vivid picks its nearest size (320×180 for 320×240).
        #expect(a.width == 320 && a.height >= 180, "\(a.width)×\(a.height)")
        let r = JPEGCrop.region(width: a.width, height: a.height, factor: 2, mcuWidth: 16, mcuHeight: 8)
        try #require(b.width == r.width && b.height == r.height, "\(b.width)×\(b.height), not \(r)\n\(daemon.transcript)")
        // The zoomed photo against regions of the whole one: the centre matches (different
        // frames and encodes, so nearly), a corner does not (vivid's colour bars differ
        // across the frame).
        func meanDifference(atX ox: Int, y oy: Int) -> Double {
            var sum = 0
            for y in 0..<b.height {
                for x in 0..<b.width { sum += abs(Int(b.pixels[y * b.width + x]) - Int(a.pixels[(y + oy) * a.width + x + ox])) }
            }
            return Double(sum) / Double(b.width * b.height)
        }
        let centre = meanDifference(atX: r.x, y: r.y)
        let corner = meanDifference(atX: 0, y: 0)
        #expect(centre < 6, "centre differs by \(centre) on average (corner: \(corner))")
        #expect(corner > centre * 3, "a corner matches as well as the centre: \(corner) vs \(centre)")

        // A long press at 2×: the video's frames are the centre half of each side (an MP4's
        // crop is made before encoding, to even sizes; ffprobe decodes every frame at it).
        let from = daemon.objects.count
        try keys.click(.volumeDown, hold: .seconds(1.5))
        let began = try #require(daemon.waitFor(from: from, DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let press = try #require(began.object.int("press"))
        let video = try #require(daemon.waitFor(timeout: .seconds(30), DaemonLines.action("video", press: press)), "\(daemon.transcript)")
        let videoFile = try #require(video.object.string("file"))
        if let ffprobe = daemonFFprobe {
            let probe = try run(
                ffprobe, "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                "stream=width,height,nb_read_frames", "-of", "default=noprint_wrappers=1", videoFile, timeout: .seconds(60))
            let (w, h) = ((a.width / 2) & ~1, (a.height / 2) & ~1)
            #expect(probe.succeeded && probe.stdout.contains("width=\(w)") && probe.stdout.contains("height=\(h)"), "\(probe)")
            #expect(probe.stdout.contains("nb_read_frames=\(video.object.int("frames") ?? -1)"), "\(probe)")
        } else {
            Issue.record("ffprobe is not installed here: the MP4 was not decoded (\(videoFile))")
        }
    }
}
