#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Foundation
import Movie
import Testing
import Vocabulary

/// Real encodes through this system's FFmpeg libraries, checked with ffprobe (an independent
/// demuxer and decoder) when it is installed.
@Suite struct FragmentedMP4Tests {
    static let ffprobe = ["/usr/bin/ffprobe", "/usr/local/bin/ffprobe"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A YUYV frame whose brightness moves with `i` (so every frame differs).
    static func yuyv(width: Int, height: Int, _ i: Int) -> [UInt8] {
        var b = [UInt8](repeating: 128, count: width * height * 2)
        for y in 0..<height {
            for x in 0..<width { b[(y * width + x) * 2] = UInt8(truncatingIfNeeded: x + y + i * 7) }
        }
        return b
    }

    /// Writes `count` frames at `times` (µs) into a new file; returns its path and the writer.
    static func record(
        _ name: String, count: Int, fps: Double = 25, time: (Int) -> Int64, finish: Bool = true
    ) throws -> (String, FragmentedMP4Writer) {
        let dir = NSTemporaryDirectory() + "movie-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        let format = StreamFormat(width: 64, height: 48, pixelFormat: .yuyv, bytesPerLine: 128, framesPerSecond: fps)
        let choice = try EncoderChoice.current(H264Settings()).get()
        let writer = try FragmentedMP4Writer(
            fd: fd, path: path, format: format, settings: H264Settings(), encoder: choice, creationTime: 1_764_000_000.25)
        for i in 0..<count { try writer.append(yuyv(width: 64, height: 48, i), at: time(i)) }
        if finish { try writer.finish() }
        close(fd)
        return (path, writer)
    }

    static func probe(_ path: String, _ entries: String, frames: Bool = false) throws -> String {
        let result = try runProgram(
            ffprobe!,
            ["-v", "error"] + (frames ? ["-show_entries", entries] : ["-count_frames", "-show_entries", entries])
                + ["-select_streams", "v:0", "-of", "default=noprint_wrappers=1", path])
        return result.stdout
    }

    @Test(.enabled(if: ffprobe != nil, "needs ffprobe"))
    func h264InMP4WithEveryFrameAndItsKernelTime() throws {
        // 25 fps, then 10 fps: a variable rate, kept.
        // Typed step by step: Swift 6.2 gives up on the one-expression form ("unable to
        // type-check this expression in reasonable time"; docs/testing.md#debian-13).
        let times: [Int64] = (0..<50).map { (i: Int) -> Int64 in
            let sinceStart: Int64 = i < 25 ? Int64(i) * 40_000 : 1_000_000 + Int64(i - 25) * 100_000
            return 7_000_000 + sinceStart
        }
        let (path, writer) = try Self.record("clip.mp4", count: 50, time: { times[$0] })
        #expect(writer.frames == 50 && writer.framesOnDisk == 50)
        let stream = try Self.probe(path, "stream=codec_name,nb_read_frames,width,height")
        #expect(stream.contains("codec_name=h264") && stream.contains("nb_read_frames=50") && stream.contains("width=64"), "\(stream)")
        let tags = try Self.probe(path, "format_tags=creation_time", frames: true)
        // The first frame's wall-clock time, to the second (the `mvhd` box keeps no more;
        // the action line's frame_time has the rest).
        #expect(tags.contains("creation_time=2025-11-24T16:00:00"), "\(tags)")
        let pts = try Self.probe(path, "frame=pts_time", frames: true)
            .split(separator: "\n").compactMap { $0.split(separator: "=").last.flatMap { Double($0) } }
        #expect(pts.count == 50)
        for (i, t) in pts.enumerated() {
            let want = Double(times[i] - times[0]) / 1_000_000
            #expect(abs(t - want) < 0.0001, "frame \(i): \(t) s, filmed at \(want) s")
        }
    }

    @Test(.enabled(if: ffprobe != nil, "needs ffprobe"))
    func aFileCutAnywhereIsRepairedToItsWholeFragmentsAndPlays() throws {
        // 4 s at 25 fps, not finished (as a kill leaves it): whole fragments are on disk.
        let (path, writer) = try Self.record("cut.mp4", count: 100, time: { 1_000_000 + Int64($0) * 40_000 }, finish: false)
        #expect(writer.framesOnDisk >= 75 && writer.framesOnDisk < 100, "\(writer.framesOnDisk)")
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        #expect(Int64(size) == writer.bytesOnDisk)
        for cut in [size, size - 1, size - 300, size / 2, 40] {
            let copy = path + ".\(cut)"
            let data = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(cut)
            try data.write(to: URL(fileURLWithPath: copy))
            let fd = open(copy, O_RDWR | O_CLOEXEC)
            let repaired = MP4Recovery.repair(fd: fd)
            close(fd)
            guard let layout = repaired else {
                #expect(cut < 1000, "only a file cut inside its header is no MP4: cut at \(cut) of \(size)")
                continue
            }
            if cut == size { #expect(layout.frames == writer.framesOnDisk && layout.end == Int64(size)) }
            let stream = try Self.probe(copy, "stream=nb_read_frames")
            #expect(stream.contains("nb_read_frames=\(layout.frames)"), "cut at \(cut): \(stream), walk says \(layout)")
            // Never more than was on disk; a cut loses at most the fragment it fell in (1 s).
            #expect(layout.frames <= writer.framesOnDisk && (cut < size / 2 || layout.frames >= writer.framesOnDisk / 2 - 25), "\(layout)")
        }
    }

    @Test func notAnMP4IsLeftAlone() throws {
        let path = NSTemporaryDirectory() + "not-mp4-\(getpid())"
        try Data("RIFF\0\0\0\0AVI junk junk".utf8).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDWR | O_CLOEXEC)
        defer { close(fd); unlink(path) }
        #expect(MP4Recovery.repair(fd: fd) == nil)
    }

    /// A camera's own H.264 (Annex B access units, as `V4L2_PIX_FMT_H264` frames come) is
    /// muxed without encoding: every frame kept, fragments cut at its IDR frames. The
    /// stream is made by the ffmpeg CLI here; no camera of the test lab delivers H.264.
    @Test(.enabled(if: ffprobe != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "needs ffmpeg and ffprobe"))
    func aCamerasH264IsMuxedAsItIs() throws {
        let dir = NSTemporaryDirectory() + "movie-h264-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let made = try runProgram(
            "/usr/bin/ffmpeg",
            [
                "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "3", "-c:v", "libx264", "-g", "25",
                "-bf", "0", "-x264-params", "aud=1", "-f", "h264", dir + "/camera.h264",
            ])
        try #require(made.succeeded, "\(made)")
        let stream = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/camera.h264")))
        // Access units: each starts with an access unit delimiter (NAL type 9).
        var starts: [Int] = []
        for i in 0..<(stream.count - 4)
        where stream[i] == 0 && stream[i + 1] == 0 && stream[i + 2] == 0 && stream[i + 3] == 1
            && stream[i + 4] & 0x1F == 9
        { starts.append(i) }
        let units = zip(starts, starts.dropFirst() + [stream.count]).map { Array(stream[$0..<$1]) }
        #expect(units.count == 75)
        #expect(units.filter(FragmentedMP4Writer.isKeyframe(annexB:)).count == 3)

        let path = dir + "/camera.mp4"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(fd) }
        let format = StreamFormat(width: 64, height: 48, pixelFormat: .h264, bytesPerLine: 0, framesPerSecond: 25)
        let writer = try FragmentedMP4Writer(
            fd: fd, path: path, format: format, settings: H264Settings(),
            encoder: EncoderChoice(name: "none", isHardware: false, reason: "unused"), creationTime: 0)
        #expect(writer.encoder == nil)
        for (i, unit) in units.enumerated() { try writer.append(unit, at: 3_000_000 + Int64(i) * 40_000) }
        #expect(writer.framesOnDisk == 50, "two whole fragments before the last one is cut")
        try writer.finish()
        let probe = try Self.probe(path, "stream=codec_name,nb_read_frames,width,height")
        #expect(probe.contains("codec_name=h264") && probe.contains("nb_read_frames=75") && probe.contains("width=64"), "\(probe)")
    }

    /// MJPEG camera frames are decoded (libavcodec), cropped for a digital zoom and encoded;
    /// a damaged frame is left out and counted, and the recording goes on.
    @Test(.enabled(if: ffprobe != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "needs ffmpeg and ffprobe"))
    func mjpegFramesAreDecodedCroppedAndADamagedOneIsLeftOut() throws {
        let dir = NSTemporaryDirectory() + "movie-mjpeg-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let made = try runProgram(
            "/usr/bin/ffmpeg",
            [
                "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-t", "1", "-c:v", "mjpeg", "-f", "mjpeg",
                dir + "/camera.mjpeg",
            ])
        try #require(made.succeeded, "\(made)")
        let stream = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/camera.mjpeg")))
        var starts: [Int] = []
        for i in 0..<(stream.count - 2) where stream[i] == 0xFF && stream[i + 1] == 0xD8 && stream[i + 2] == 0xFF { starts.append(i) }
        var jpegs = zip(starts, starts.dropFirst() + [stream.count]).map { Array(stream[$0..<$1]) }
        #expect(jpegs.count == 25)
        jpegs[10] = [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3]  // cut short: no image in it

        let path = dir + "/zoomed.mp4"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(fd) }
        let format = StreamFormat(width: 160, height: 120, pixelFormat: .mjpeg, bytesPerLine: 0, framesPerSecond: 25)
        let crop = CropRect(width: 160, height: 120, zoom: 2)
        #expect(crop == CropRect(x: 40, y: 30, width: 80, height: 60))
        let writer = try FragmentedMP4Writer(
            fd: fd, path: path, format: format, crop: crop, settings: H264Settings(),
            encoder: EncoderChoice.current(H264Settings()).get(), creationTime: 0)
        for (i, jpeg) in jpegs.enumerated() { try writer.append(jpeg, at: Int64(i) * 40_000) }
        try writer.finish()
        #expect(writer.undecodable == 1 && writer.frames == 24)
        let probe = try Self.probe(path, "stream=codec_name,nb_read_frames,width,height")
        #expect(
            probe.contains("codec_name=h264") && probe.contains("nb_read_frames=24") && probe.contains("width=80")
                && probe.contains("height=60"), "\(probe)")
    }

    @Test func annexBKeyframes() {
        #expect(FragmentedMP4Writer.isKeyframe(annexB: [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 1, 0x65, 9]))
        #expect(!FragmentedMP4Writer.isKeyframe(annexB: [0, 0, 0, 1, 0x41, 1, 2, 3]))
        #expect(!FragmentedMP4Writer.isKeyframe(annexB: []))
    }
}
