import EvcaptureTesting
import Foundation
import Testing
import Vocabulary
@testable import Recording

/// A full disk and a power loss (docs/behaviour.md#reliability), with ``AtomicFile/spaceLeft`` standing in
/// for the file system: a write past it writes what fits and fails with ENOSPC, as a full
/// disk does. `ReliabilityDiskTests` (system tests) does the same on a real full tmpfs.
@Suite struct DiskFaultTests {
    static func jpeg(_ i: Int) throws -> [UInt8] {
        try JPEG.encodeYUYV(yuyvImage(width: 32, height: 24, stride: 64, shade: i * 20), width: 32, height: 24, bytesPerLine: 64)
    }

    /// Checks a finished AVI's structure: RIFF size, frame counts, and every index entry
    /// pointing at a whole `00dc` chunk of the size it says.
    static func checkAVI(_ path: String, frames: Int) throws {
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(fourCC(b, 0) == "RIFF" && le32(b, 4) == b.count - 8, "RIFF size")
        #expect(le32(b, 48) == frames && le32(b, 140) == frames, "dwTotalFrames, dwLength")
        let idx = 212 + 8 + le32(b, 216)
        try #require(idx + 8 <= b.count)
        #expect(fourCC(b, idx) == "idx1" && le32(b, idx + 4) == 16 * frames)
        #expect(idx + 8 + 16 * frames == b.count, "the index ends the file")
        for i in 0..<frames {
            let e = idx + 8 + 16 * i
            let chunk = 220 + le32(b, e + 8)
            #expect(fourCC(b, chunk) == "00dc" && le32(b, chunk + 4) == le32(b, e + 12))
            #expect(b[chunk + 8] == 0xFF && b[chunk + 9] == 0xD8, "frame \(i) starts a JPEG")
        }
    }

    /// Room for 5 frames and `slack` bytes (-1: all of the sixth frame's chunk but its last
    /// byte): the sixth frame fails. With room for the index (8 + 16 × 5 bytes) in the slack,
    /// 5 frames are kept; without, the fifth makes room for the index of the first four.
    @Test(arguments: [0, 1, 7, 87, 88, 300, -1])
    func aVideoWhoseDiskFillsKeepsEveryWholeFrame(slack: Int) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = try AtomicFile(directory: dir, finalName: "clip.avi")
        let writer = try AVIWriter(file: file, width: 32, height: 24)
        var frames: [[UInt8]] = []
        for i in 0..<6 { frames.append(try Self.jpeg(i)) }
        let five = frames.prefix(5).reduce(0) { $0 + 8 + $1.count + ($1.count & 1) }
        let sixth = 8 + frames[5].count + (frames[5].count & 1)
        let room = slack < 0 ? sixth - 1 : slack
        file.spaceLeft = five + room
        for frame in frames.prefix(5) { #expect(try writer.append(jpeg: frame)) }
        var failure: FileWriteError?
        do { _ = try writer.append(jpeg: frames[5]) } catch { failure = error }
        #expect(failure?.errno == ENOSPC)
        #expect(failure.map { RecordingError.file($0).code } == "disk-full")
        #expect(writer.frameCount == 5)
        #expect(file.size == 224 + five, "cut back to the last whole frame")
        let path = try writer.finish(framesPerSecond: 30)
        let kept = room >= 8 + 16 * 5 ? 5 : 4
        #expect(writer.frameCount == kept)
        try Self.checkAVI(path, frames: kept)
        if let ffprobe = AVIWriterTests.ffprobe {
            let probe = try FFprobe.run(ffprobe, path)
            #expect(probe.frames == kept && probe.codec == "mjpeg" && probe.errors.isEmpty, "\(probe)")
        }
    }

    /// The disk fills exactly at a frame's end: the index has no room at all. Frames are
    /// dropped from the end until it fits; the file is still whole.
    @Test func noRoomForTheIndexDropsTheLastFrames() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = try AtomicFile(directory: dir, finalName: "clip.avi")
        let writer = try AVIWriter(file: file, width: 32, height: 24)
        let frames = try (0..<5).map(Self.jpeg)
        file.spaceLeft = frames.reduce(0) { $0 + 8 + $1.count + ($1.count & 1) }
        for frame in frames { #expect(try writer.append(jpeg: frame)) }
        let path = try writer.finish(framesPerSecond: 30)
        #expect(writer.frameCount == 4)
        try Self.checkAVI(path, frames: 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["clip.avi"])
    }

    /// A photo that cannot be written: `disk-full`, and nothing left behind.
    @Test func aPhotoThatDoesNotFitLeavesNothing() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = try AtomicFile(directory: dir, finalName: "photo.jpg")
        file.spaceLeft = 100
        let jpeg = try Self.jpeg(0)
        var failure: FileWriteError?
        do { try file.write(jpeg) } catch { failure = error }
        #expect(failure?.errno == ENOSPC)
        #expect(file.size == 100, "the disk took what fit")
        file.abandon()
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == [])
        #expect(RecordingError.file(FileWriteError(errno: EDQUOT, context: "")).code == "disk-full")
        #expect(RecordingError.file(FileWriteError(errno: EACCES, context: "")).code == "file")
    }

    /// `.evcapture-*.part` files of a killed process are removed at start; one a live
    /// process is writing (locked) stays, and so does everything else.
    @Test func leftoverPartFilesAreRemovedButNotOneBeingWritten() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in [".evcapture-abc.part", ".evcapture-0.part", "photo.jpg", ".other.part", "evcapture-x.part"] {
            FileManager.default.createFile(atPath: "\(dir)/\(name)", contents: Data("x".utf8))
        }
        let live = try AtomicFile(directory: dir, finalName: "live.jpg")
        try live.write([1, 2, 3])
        let removed = AtomicFile.removeLeftovers(in: dir)
        #expect(Set(removed) == [".evcapture-abc.part", ".evcapture-0.part"])
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        #expect(left == ["photo.jpg", ".other.part", "evcapture-x.part", (live.temporaryPath as NSString).lastPathComponent])
        #expect(try live.commit() == "\(dir)/live.jpg")
    }

    /// A pattern without a unique token (`photo.jpg`) keeps working past a thousand files.
    @Test func aNameWithoutAUniqueTokenNeverRunsOut() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        FileManager.default.createFile(atPath: "\(dir)/photo.jpg", contents: nil)
        for n in 1...1200 { FileManager.default.createFile(atPath: "\(dir)/photo-\(n).jpg", contents: nil) }
        FileManager.default.createFile(atPath: "\(dir)/photo-x7.jpg", contents: nil)  // not a number: ignored
        for expected in [1201, 1202] {
            let f = try AtomicFile(directory: dir, finalName: "photo.jpg")
            try f.write([1])
            #expect(try f.commit() == "\(dir)/photo-\(expected).jpg")
        }
        // A gap low down is not searched for: numbers only grow past the highest.
        try FileManager.default.removeItem(atPath: "\(dir)/photo-5.jpg")
        let f = try AtomicFile(directory: dir, finalName: "photo.jpg")
        try f.write([1])
        #expect(try f.commit() == "\(dir)/photo-1203.jpg")
    }
}
