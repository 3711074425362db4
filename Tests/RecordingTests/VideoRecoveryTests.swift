#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Movie
import Testing
import Vocabulary
@testable import Recording

/// What a crash leaves of a recording is kept at the next start, under its name.
@Suite struct VideoRecoveryTests {
    static func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "recovery-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func files(_ dir: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted() }

    @Test func aRecordingsTemporaryNameCarriesItsFinalName() throws {
        let dir = try Self.scratch()
        let video = try AtomicFile(directory: dir, finalName: "evcapture-20261125-101010.123-press4.mp4", recoverable: true)
        let temporary = (video.temporaryPath as NSString).lastPathComponent
        #expect(temporary.hasPrefix(".evcapture-") && temporary.hasSuffix("~evcapture-20261125-101010.123-press4.mp4.part"), "\(temporary)")
        #expect(AtomicFile.intendedName(ofTemporary: temporary) == "evcapture-20261125-101010.123-press4.mp4")
        let photo = try AtomicFile(directory: dir, finalName: "p.jpg")
        #expect(AtomicFile.intendedName(ofTemporary: (photo.temporaryPath as NSString).lastPathComponent) == nil)
        // Too long to carry: a made-up name with the format's extension.
        let long = try AtomicFile(directory: dir, finalName: String(repeating: "x", count: 230) + ".avi", recoverable: true)
        let longName = (long.temporaryPath as NSString).lastPathComponent
        #expect(AtomicFile.intendedName(ofTemporary: longName) == "")
        let made = VideoRecovery.recoveredName(intended: "", temporary: longName, format: .avi)
        #expect(made.hasPrefix("evcapture-recovered-") && made.hasSuffix(".avi") && !made.contains("~"), "\(made)")
        #expect(VideoRecovery.recoveredName(intended: "a.mp4", temporary: ".evcapture-x~a.mp4.part", format: .mp4) == "a.mp4")
        // Names that would leave the directory or hide are not taken.
        #expect(AtomicFile.intendedName(ofTemporary: ".evcapture-x~.hidden.mp4.part") == "")
    }

    @Test func anAVIAKillCutIsFinishedAndKeptAndPhotosLeftoversGo() throws {
        let dir = try Self.scratch()
        let file = try AtomicFile(directory: dir, finalName: "clip.avi", recoverable: true)
        let writer = try AVIWriter(file: file, width: 32, height: 24, framesPerSecond: 25)
        let jpeg = try JPEG.encodeYUYV([UInt8](repeating: 128, count: 32 * 24 * 2), width: 32, height: 24, bytesPerLine: 64)
        for _ in 0..<7 { _ = try writer.append(jpeg: jpeg) }
        // Killed mid-frame: half a chunk at the end, no index, header counts still 0.
        try file.write(Array("00dc".utf8) + [200, 0, 0, 0, 1, 2, 3])
        let temporary = (file.temporaryPath as NSString).lastPathComponent
        flock(file.fd, LOCK_UN)  // as the kernel does when the process is killed
        FileManager.default.createFile(atPath: dir + "/.evcapture-photo1.part", contents: Data([1, 2, 3]))
        let (recovered, removed) = VideoRecovery.recover(in: dir)
        #expect(removed.isEmpty)
        #expect(recovered == [RecoveredVideo(path: dir + "/clip.avi", temporaryName: temporary, format: .avi, frames: 7)])
        #expect(AtomicFile.removeLeftovers(in: dir) == [".evcapture-photo1.part"])
        #expect(Self.files(dir) == ["clip.avi"])
        if let ffprobe = AVIWriterTests.ffprobe {
            let probe = try FFprobe.run(ffprobe, dir + "/clip.avi")
            #expect(probe.frames == 7 && probe.codec == "mjpeg" && probe.rate == "25/1" && probe.errors.isEmpty, "\(probe)")
        }
    }

    @Test func anMP4IsCutToItsWholeFragmentsAndAnEmptyRecordingGoes() throws {
        let dir = try Self.scratch()
        // A recording with 2 s of frames, never finished.
        let file = try AtomicFile(directory: dir, finalName: "clip.mp4", recoverable: true)
        let format = StreamFormat(width: 32, height: 24, pixelFormat: .yuyv, bytesPerLine: 64, framesPerSecond: 25)
        let writer = try FragmentedMP4Writer(
            fd: file.fd, path: file.temporaryPath, format: format, settings: H264Settings(),
            encoder: EncoderChoice.current(H264Settings()).get(), creationTime: 0)
        for i in 0..<60 { try writer.append([UInt8](repeating: UInt8(i), count: 32 * 24 * 2), at: Int64(i) * 40_000) }
        // An empty one (killed before its first fragment was cut): removed.
        let empty = try AtomicFile(directory: dir, finalName: "empty.mp4", recoverable: true)
        try empty.write(Array("\0\0\0\u{10}ftypisom\0\0\0\0".utf8))
        let emptyName = (empty.temporaryPath as NSString).lastPathComponent
        flock(file.fd, LOCK_UN)
        flock(empty.fd, LOCK_UN)
        let (recovered, removed) = VideoRecovery.recover(in: dir)
        #expect(removed == [emptyName])
        #expect(recovered.count == 1 && recovered.first?.path == dir + "/clip.mp4" && recovered.first?.frames == writer.framesOnDisk)
        #expect(writer.framesOnDisk >= 24 && writer.framesOnDisk < 60, "\(writer.framesOnDisk)")
        #expect(Self.files(dir) == ["clip.mp4"])
        if let ffprobe = AVIWriterTests.ffprobe {
            let probe = try FFprobe.run(ffprobe, dir + "/clip.mp4")
            #expect(probe.frames == writer.framesOnDisk && probe.codec == "h264" && probe.errors.isEmpty, "\(probe)")
        }
    }

    @Test func aRecordingBeingWrittenIsLeftAlone() throws {
        let dir = try Self.scratch()
        let live = try AtomicFile(directory: dir, finalName: "live.avi", recoverable: true)
        _ = try AVIWriter(file: live, width: 8, height: 8)
        let (recovered, removed) = VideoRecovery.recover(in: dir)
        #expect(recovered.isEmpty && removed.isEmpty)
        #expect(AtomicFile.removeLeftovers(in: dir).isEmpty)
        #expect(Self.files(dir) == [(live.temporaryPath as NSString).lastPathComponent])
    }
}

@Suite struct VideoReportTests {
    /// What `evcapture controls` and `check-config` say about videos: the encoder and why.
    @Test func theReportNamesTheEncoderAndWhy() {
        let mp4 = VideoFormat.mp4.report(H264Settings())
        #expect(mp4.hasPrefix("video: H.264 in fragmented MP4, encoder "), "\(mp4)")
        // This machine (and CI's) has no V4L2 hardware H.264 encoder: software, said why.
        if EncoderChoice.hardwareNode == nil {
            #expect(mp4.contains("libx264 (software: no V4L2 hardware H.264 encoder on this system)"), "\(mp4)")
        }
        let missing = VideoFormat.mp4.report(H264Settings(encoder: .named("h264_v4l2m2m")))
        if EncoderChoice.hardwareNode == nil { #expect(missing.contains("recordings will fail"), "\(missing)") }
        #expect(VideoFormat.avi.report(H264Settings()).hasPrefix("video: MJPEG in AVI"))
    }
}
