#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Vocabulary
import Foundation
import Logging
import Testing
import V4L2
import Frames
import Recording

/// A real full disk (docs/behaviour.md#reliability): small tmpfs mounts in the guest, vivid as the camera,
/// files checked with ffprobe. And what a kill leaves: removed at the next start.
@Suite(.systemTest, .serialized)
struct ReliabilityDiskTests {
    static let logger = Logger(label: "evcapture.tests.disk")

    /// A tmpfs of `size` mounted on a new directory; unmounted by `unmount()`.
    final class SmallDisk {
        let scratch: ScratchDirectory
        let path: String
        init(size: String) throws {
            scratch = try ScratchDirectory(prefix: "disk")
            path = scratch.url.path + "/mnt"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let r = try run("mount", "-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", path)
            try #require(r.succeeded, "mount -t tmpfs: \(r)")
        }
        func unmount() { _ = try? run("umount", path) }
        var files: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
        /// Fills what is left with one file (`filler`).
        func fill() {
            let fd = open(path + "/filler", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            defer { close(fd) }
            let block = [UInt8](repeating: 0x5A, count: 4096)
            while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        }
    }

    let node: String
    init() throws {
        node = try #require(vividNode(), "no vivid-000-vid-cap in /sys/class/video4linux (the guest loads vivid)")
    }

    func settings(_ directory: String, videoFormat: VideoFormat = .mp4) -> CaptureSettings {
        CaptureSettings(
            devicePath: node, outputDirectory: directory, width: 320, height: 240, frameTimeout: .seconds(5),
            videoFormat: videoFormat)
    }

    /// A recording into a small tmpfs: the disk fills after a few dozen frames; the recording
    /// ends by itself, says `disk-full`, and the file keeps every whole frame (AVI, with its
    /// index) or fragment (MP4): ffprobe decodes as many frames as the writer reports.
    @Test(.timeLimit(.minutes(2)), arguments: [VideoFormat.mp4, .avi]) func aVideoWhoseDiskFillsIsKeptPlayable(format: VideoFormat)
        async throws
    {
        // An MP4 is about a tenth of an AVI: a smaller disk fills as soon.
        let size = format == .mp4 ? "128k" : "256k"
        let disk = try SmallDisk(size: size)
        defer { disk.unmount() }
        let frames = FrameSource(settings: settings(disk.path, videoFormat: format).stream, logger: Self.logger)
        defer { frames.stopAndWait() }
        let recording = try await VideoRecording.start(
            from: frames, time: monotonicNow(), settings(disk.path, videoFormat: format),
            CaptureRequest(press: 1, action: .primary, time: 0), logger: Self.logger)
        let ended = await eventually(seconds: 60) { recording.hasEnded }
        #expect(ended, "the recording did not stop at the full disk")
        let video = try await recording.stop().get()
        #expect(video.truncated && video.stoppedBy?.code == "disk-full", "\(video)")
        #expect(video.frames > 3, "\(video.frames) frames")
        #expect(disk.files == [(video.path as NSString).lastPathComponent], "nothing else, no .part: \(disk.files)")
        let probe = try run(
            "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
            "stream=codec_name,nb_read_frames", "-of", "default=noprint_wrappers=1", video.path)
        #expect(probe.succeeded && probe.stderr.isEmpty, "\(probe)")
        #expect(probe.stdout.contains("nb_read_frames=\(video.frames)"), "ffprobe: \(probe.stdout), writer: \(video.frames)")
        var fs = statvfs()
        statvfs(disk.path, &fs)
        print(
            "disk full (\(size) tmpfs, \(format.rawValue)): video kept \(video.frames) frames, \(try FileManager.default.attributesOfItem(atPath: video.path)[.size] ?? 0) bytes, \(Int(fs.f_bavail) * Int(fs.f_bsize)) bytes free after; ffprobe: \(probe.stdout.split(separator: "\n").joined(separator: " "))"
        )
    }

    /// A photo on a full disk: the error's code is `disk-full` and nothing is left behind.
    @Test(.timeLimit(.minutes(1))) func aPhotoOnAFullDiskIsDiskFullAndLeavesNothing() throws {
        let disk = try SmallDisk(size: "64k")
        defer { disk.unmount() }
        disk.fill()
        #expect(disk.files == ["filler"])
        var failure: RecordingError?
        let frames = FrameSource(settings: settings(disk.path).stream, logger: Self.logger)
        defer { frames.stopAndWait() }
        do throws(RecordingError) {
            let ring: RingFrame
            do throws(StreamingError) { ring = try frames.frame(nearest: monotonicNow(), timeout: .seconds(10)) } catch {
                throw .camera(error)
            }
            _ = try Photo.save(ring, settings(disk.path), CaptureRequest(press: 2, action: .primary, time: 0))
        } catch { failure = error }
        #expect(failure?.code == "disk-full", "\(failure.map { "\($0)" } ?? "no error")")
        #expect(disk.files == ["filler"], "nothing partial: \(disk.files)")
        print("photo on a full disk: \(failure?.code ?? "-"): \(failure.map { "\($0)" } ?? "")")
    }

    /// What a kill leaves (a `.evcapture-*.part` file) is removed when the daemon starts.
    @Test(.timeLimit(.minutes(1))) func leftoversOfAKillAreRemovedAtStart() throws {
        let scratch = try ScratchDirectory(prefix: "leftovers")
        let output = scratch.url.path
        for name in [".evcapture-killed.part", "kept.jpg"] {
            FileManager.default.createFile(atPath: "\(output)/\(name)", contents: Data(repeating: 1, count: 1000))
        }
        let daemon = try ReliabilityDaemon(config: reliabilityConfig(extra: "[output]\ndirectory = \"\(output)\""))
        #expect(try FileManager.default.contentsOfDirectory(atPath: output) == ["kept.jpg"])
        #expect(daemon.stderr.contains("removed 1 unfinished file(s)"), "\(daemon)")
        #expect(daemon.stop() == 0)
    }
}
