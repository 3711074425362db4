#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Foundation
import Testing

/// The photo prepared at `began` (docs/behaviour.md#the-moment-of-the-press), on the real
/// kernel with vivid: while the button is still down the photo is already in a hidden `.part`
/// file in the output directory; the click renames that very file (same inode) to its final
/// name; a long press removes it.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct PhotoPreparationSystemTests {
    /// The hidden files in `dir` with their inode numbers.
    func parts(_ dir: String) -> [String: UInt64] {
        var out: [String: UInt64] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where name.hasSuffix(".part") {
            if let ino = inode("\(dir)/\(name)") { out[name] = ino }
        }
        return out
    }

    func inode(_ path: String) -> UInt64? {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_ino) : nil
    }

    func files(_ dir: String, suffix: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(suffix) }.sorted()
    }

    @Test(.enabled(if: vividNode() != nil, "needs vivid (vivid-000-vid-cap)"))
    func thePhotoIsOnDiskDuringThePressAndALongPressLeavesNone() throws {
        let vivid = try #require(vividNode())
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let scratch = try DaemonScratch("prepared")
        // A 5 s hold threshold: time to look at the directory while a click is still held,
        // however slowly the emulated machine makes the photo.
        let config = try scratch.write(
            "evcapture.toml",
            """
            [capture]
            hold-threshold = 5

            [camera]
            device = "none"
            capture-device = "\(vivid)"
            width = 320
            height = 240
            stream = "always"

            [output]
            directory = "\(scratch.output)"
            """)
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { _ = daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")
        try #require(pollUntil(timeout: .seconds(20)) { daemon.stderr.contains("capture stream started") }, "\(daemon.transcript)")
        Thread.sleep(forTimeInterval: 1)  // a few frames in the ring

        // A click held until its photo is prepared (at most 3.2 s): prepared while the button is down.
        var before = daemon.objects.count
        try keys.press(.volumeDown)
        let began = try #require(daemon.waitFor(from: before, DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let press = try #require(began.object.int("press"))
        let prepared = pollUntil(timeout: .seconds(3)) { parts(scratch.output).count == 1 }
        let part = parts(scratch.output)
        #expect(files(scratch.output, suffix: ".jpg").isEmpty, "a photo under its final name before the click")
        #expect(!daemon.objects.contains(where: DaemonLines.action("photo", press: press)))
        Thread.sleep(forTimeInterval: 0.2)
        try keys.release(.volumeDown)
        #expect(prepared, "no .part within 3 s of the press (the ring's frame + the encode): \(files(scratch.output, suffix: ""))")
        let ended = try #require(daemon.waitFor(from: before, DaemonLines.capture("ended", node: keys.node)), "\(daemon.transcript)")
        #expect(ended.object.string("gesture") == "click")
        let photo = try #require(daemon.waitFor(DaemonLines.action("photo", press: press)), "\(daemon.transcript)")
        let path = try #require(photo.object.string("file"))
        // The prepared file itself, renamed: the same inode under the final name.
        #expect(part.count == 1 && inode(path) == part.first?.value, "\(part) → \(path) (inode \(inode(path) ?? 0))")
        #expect(path.hasPrefix(scratch.output + "/evcapture-") && path.hasSuffix("-press\(press).jpg"), "\(path)")
        #expect(parts(scratch.output).isEmpty && files(scratch.output, suffix: ".jpg").count == 1)
        let jpeg = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(looksLikeJPEG(jpeg), "\(path): \(jpeg.count) bytes")
        // Still the frame of the press (vivid at 5 fps: within half its 200 ms interval, or
        // within one interval when vivid skipped the frame nearest the press at its source, as
        // a loaded emulator makes it do now and then).
        let frameTime = try #require(photo.object.double("frame_time"))
        let pressTime = try #require(began.object.double("time"))
        #expect(abs(frameTime - pressTime) <= 0.205, "frame \(frameTime) for the press at \(pressTime)")
        // Only the commit was left at the release (the same inode, above); how soon after the
        // release the line comes is a figure, not checked here.
        let afterRelease = try #require(photo.object.double("time")) - (try #require(ended.object.double("time")))
        print("prepared photo: action line \(Int(afterRelease * 1000)) ms after the release")

        // A long press: the photo prepared at `began` goes when the hold threshold passes;
        // the press records a video and leaves no photo and no .part.
        before = daemon.objects.count
        try keys.press(.volumeDown)
        let longBegan = try #require(daemon.waitFor(from: before, DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let longPress = try #require(longBegan.object.int("press"))
        #expect(pollUntil(timeout: .seconds(3)) { parts(scratch.output).count == 1 }, "not prepared")
        let discarded = parts(scratch.output)
        let held = daemon.waitFor(timeout: .seconds(10), from: before, DaemonLines.capture("held", node: keys.node))
        #expect(held != nil, "\(daemon.transcript)")
        #expect(
            pollUntil(timeout: .seconds(3)) { Set(parts(scratch.output).keys).isDisjoint(with: discarded.keys) },
            "the prepared photo \(discarded) is still there after the long press")
        Thread.sleep(forTimeInterval: 0.5)
        try keys.release(.volumeDown)
        let video = try #require(
            daemon.waitFor(timeout: .seconds(20), DaemonLines.action("video", press: longPress)), "\(daemon.transcript)")
        #expect(video.object.string("file")?.hasSuffix(".mp4") == true)
        #expect(files(scratch.output, suffix: ".jpg").count == 1, "a photo for the long press: \(files(scratch.output, suffix: ".jpg"))")
        #expect(parts(scratch.output).isEmpty, "left: \(parts(scratch.output))")
        #expect(!daemon.objects.contains(where: DaemonLines.action("photo", press: longPress)))
        #expect(!daemon.objects.contains { $0.event == "error" }, "\(daemon.transcript)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        #expect(parts(scratch.output).isEmpty)
    }
}
