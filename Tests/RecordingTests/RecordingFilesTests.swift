import CLibjpeg
import EvcaptureTesting
import Foundation
import Testing
@testable import V4L2
import Vocabulary
@testable import Frames
@testable import Recording

@Suite struct JPEGTests {
    @Test func encodedYUYVDecodesWithItsSize() throws {
        let image = yuyvImage(width: 64, height: 48, stride: 64 * 2 + 16)
        let jpeg = try JPEG.encodeYUYV(image, width: 64, height: 48, bytesPerLine: 64 * 2 + 16, quality: 85)
        #expect(Array(jpeg.prefix(2)) == [0xFF, 0xD8], "SOI")
        #expect(Array(jpeg.suffix(2)) == [0xFF, 0xD9], "EOI")
        let info = try JPEG.decode(jpeg)
        #expect(info == JPEG.ImageInfo(width: 64, height: 48, components: 3, warnings: 0))
    }

    /// An encoder error after its output grew past the first buffer (here: the size limit)
    /// frees the one live buffer once: jpeg_mem_dest's growth had freed the first one, which
    /// the error path freed again (glibc aborts on it). And the limit the encoder is given, the
    /// worst case of its size, holds noise at quality 100.
    @Test func anErrorAfterTheOutputGrewIsAnErrorNotADoubleFree() throws {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        let noise = (0..<(256 * 2 * 256)).map { _ in
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seed >> 56)
        }
        var out: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        var message = [CChar](repeating: 0, count: 256)
        for limit: UInt in [10_000, 100_000] {
            let rc = evc_jpeg_encode_yuyv(noise, 256, 256, 512, 100, limit, &out, &size, &message, message.count)
            #expect(rc == -1 && out == nil)
            #expect(String(cString: message) == "the JPEG would be larger than \(limit) bytes")
        }
        let jpeg = try JPEG.encodeYUYV(noise, width: 256, height: 256, bytesPerLine: 512, quality: 100)
        #expect(jpeg.count > 100_000, "\(jpeg.count) bytes")
        #expect(try JPEG.decode(jpeg) == JPEG.ImageInfo(width: 256, height: 256, components: 3, warnings: 0))
    }

    @Test func oddWidthIsEncoded() throws {
        let image = yuyvImage(width: 33, height: 7, stride: 68)
        let info = try JPEG.decode(JPEG.encodeYUYV(image, width: 33, height: 7, bytesPerLine: 68))
        #expect(info.width == 33 && info.height == 7)
    }

    @Test func badInputIsAnErrorNotACrash() throws {
        #expect(throws: JPEGError.self) { try JPEG.encodeYUYV([1, 2, 3], width: 64, height: 48, bytesPerLine: 128) }
        #expect(throws: JPEGError.self) { try JPEG.decode([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 1, 2]) }
        #expect(throws: JPEGError.self) { try JPEG.decode(Array("not a jpeg".utf8)) }
        // A truncated image decodes with a warning (libjpeg pads it), which callers can see.
        let jpeg = try JPEG.encodeYUYV(yuyvImage(width: 64, height: 48, stride: 128), width: 64, height: 48, bytesPerLine: 128)
        let info = try JPEG.decode(Array(jpeg.prefix(jpeg.count - 64)))
        #expect(info.warnings > 0)
    }

    @Test func mjpegFramesPassThroughAndYUYVFramesAreEncoded() throws {
        let jpeg = try JPEG.encodeYUYV(yuyvImage(width: 16, height: 16, stride: 32), width: 16, height: 16, bytesPerLine: 32)
        let mjpeg = VideoFrame(bytes: jpeg, format: StreamFormat(width: 16, height: 16, pixelFormat: .mjpeg, bytesPerLine: 0))
        #expect(try JPEG.data(from: mjpeg) == jpeg)
        let garbage = VideoFrame(bytes: [0, 1, 2, 3], format: mjpeg.format)
        #expect(throws: JPEGError.self) { try JPEG.data(from: garbage) }
        let yuyv = VideoFrame(
            bytes: yuyvImage(width: 16, height: 8, stride: 32),
            format: StreamFormat(width: 16, height: 8, pixelFormat: .yuyv, bytesPerLine: 32))
        #expect(try JPEG.decode(JPEG.data(from: yuyv)).height == 8)
    }

    @Test func pixelFormatNames() {
        #expect(PixelFormat.mjpeg.description == "MJPG")
        #expect(PixelFormat.yuyv.description == "YUYV")
    }
}

@Suite struct AtomicFileTests {
    @Test func commitNeverReplacesAndLeavesNoTemporaryFiles() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("old".utf8).write(to: URL(fileURLWithPath: "\(dir)/a.jpg"))
        let f = try AtomicFile(directory: dir, finalName: "a.jpg")
        try f.write(Array("new".utf8))
        #expect(FileManager.default.fileExists(atPath: f.temporaryPath))
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: dir).contains("a-1.jpg")), "not visible before commit")
        let path = try f.commit()
        #expect(path == "\(dir)/a-1.jpg")
        #expect(try String(contentsOfFile: "\(dir)/a.jpg", encoding: .utf8) == "old")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new")
        let g = try AtomicFile(directory: dir, finalName: "b.jpg")
        try g.write([1, 2, 3])
        g.abandon()
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["a-1.jpg", "a.jpg"])
    }

    /// A configured output directory that is missing (an unmounted card) is a clear error
    /// naming it — nothing is created under it. The daemon makes only its default directory
    /// (`makeDirectory`), which fails clearly when its parent is a file.
    @Test func aMissingOutputDirectoryIsAClearError() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect {
            _ = try AtomicFile(directory: "\(dir)/card/photos", finalName: "x.jpg")
        } throws: { error in
            (error as? FileWriteError)?.code == .notFound && "\(error)".contains("\(dir)/card/photos")
                && "\(error)".contains("no such file")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/card"))
        try AtomicFile.makeDirectory("\(dir)/new/photos")
        #expect(FileManager.default.fileExists(atPath: "\(dir)/new/photos"))
        FileManager.default.createFile(atPath: "\(dir)/file", contents: Data())
        #expect {
            try AtomicFile.makeDirectory("\(dir)/file/evcapture")
        } throws: { error in
            "\(error)".contains("\(dir)/file")
        }
    }
}

@Suite struct FileNamePatternTests {
    @Test func defaultNameHasDateTimeAndPress() throws {
        let name = FileNamePattern.defaultPhoto.name(time: 1_700_000_000.123, press: 7, action: .primary, kind: "photo")
        #expect(name.wholeMatch(of: /evcapture-\d{8}-\d{6}\.123-press7\.jpg/) != nil, "\(name)")
        let custom = try FileNamePattern("{kind}-{action}-{press}.avi")
        #expect(custom.name(time: 0, press: 3, action: .secondary, kind: "video") == "video-secondary-3.avi")
    }

    @Test(arguments: ["", "a/b.jpg", ".hidden.jpg", "x-{nope}.jpg", "x-{date.jpg"])
    func badPatternsAreRejected(_ pattern: String) {
        #expect(throws: FileNamePattern.PatternError.self) { try FileNamePattern(pattern) }
    }
}

@Suite struct AVIWriterTests {
    func writeAVI(frames: Int, fps: Double, in dir: String) throws -> (String, [[UInt8]]) {
        let writer = try AVIWriter(file: AtomicFile(directory: dir, finalName: "clip.avi"), width: 32, height: 24)
        var jpegs: [[UInt8]] = []
        for i in 0..<frames {
            let jpeg = try JPEG.encodeYUYV(
                yuyvImage(width: 32, height: 24, stride: 64, shade: i * 20), width: 32, height: 24, bytesPerLine: 64)
            jpegs.append(jpeg)
            #expect(try writer.append(jpeg: jpeg))
        }
        return (try writer.finish(framesPerSecond: fps), jpegs)
    }

    @Test func headersIndexAndChunksParseBack() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, jpegs) = try writeAVI(frames: 10, fps: 15, in: dir)
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(fourCC(b, 0) == "RIFF" && fourCC(b, 8) == "AVI ")
        #expect(le32(b, 4) == b.count - 8, "RIFF size")
        #expect(fourCC(b, 24) == "avih")
        #expect(le32(b, 32) == 66_667, "µs per frame at 15 fps")
        #expect(le32(b, 48) == 10, "dwTotalFrames")
        #expect(le32(b, 64) == 32 && le32(b, 68) == 24)
        #expect(fourCC(b, 108) == "vids" && fourCC(b, 112) == "MJPG")
        #expect(le32(b, 128) == 1 && le32(b, 132) == 15, "dwScale/dwRate")
        #expect(le32(b, 140) == 10, "dwLength")
        #expect(fourCC(b, 212) == "LIST" && fourCC(b, 220) == "movi")
        let idx = 212 + 8 + le32(b, 216)
        #expect(fourCC(b, idx) == "idx1")
        #expect(le32(b, idx + 4) == 16 * 10)
        #expect(idx + 8 + 160 == b.count)
        for i in 0..<10 {
            let e = idx + 8 + 16 * i
            #expect(fourCC(b, e) == "00dc" && le32(b, e + 4) == 0x10)
            let chunk = 220 + le32(b, e + 8)
            #expect(fourCC(b, chunk) == "00dc")
            #expect(le32(b, chunk + 4) == jpegs[i].count && le32(b, e + 12) == jpegs[i].count)
            #expect(Array(b[(chunk + 8)..<(chunk + 8 + jpegs[i].count)]) == jpegs[i])
        }
    }

    @Test func rates() {
        #expect(AVIWriter.rational(30) == (1, 30))
        #expect(AVIWriter.rational(29.97) == (1001, 30000))
        #expect(AVIWriter.rational(12.345) == (1000, 12345))
        #expect(
            VideoRecording.frameRate(frames: 31, first: Timestamp(microseconds: 0), last: Timestamp(microseconds: 1_000_000), nominal: 30)
                == 30, "near nominal snaps")
        #expect(
            VideoRecording.frameRate(frames: 11, first: Timestamp(microseconds: 0), last: Timestamp(microseconds: 2_000_000), nominal: 30)
                == 5, "slow camera: measured")
        #expect(VideoRecording.frameRate(frames: 1, first: Timestamp(microseconds: 0), last: Timestamp(microseconds: 0), nominal: 25) == 25)
    }

    @Test func sizeLimitStopsAppending() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try AVIWriter(file: AtomicFile(directory: dir, finalName: "big.avi"), width: 8, height: 8, maximumBytes: 1000)
        #expect(try writer.append(jpeg: [UInt8](repeating: 1, count: 500)))
        #expect(try writer.append(jpeg: [UInt8](repeating: 1, count: 500)) == false)
        #expect(writer.frameCount == 1)
        writer.abandon()
    }

    static let ffprobe = ["/usr/bin/ffprobe", "/usr/local/bin/ffprobe"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(
        .enabled(if: ffprobe != nil, "ffprobe is not installed (apt-get install ffmpeg); skipping the ffprobe check"),
        arguments: [(12, 15.0, "15/1"), (9, 29.97, "30000/1001")])
    func ffprobeReadsFrameCountAndRate(frames: Int, fps: Double, expectedRate: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, _) = try writeAVI(frames: frames, fps: fps, in: dir)
        let probe = try FFprobe.run(Self.ffprobe!, path)
        #expect(probe.codec == "mjpeg")
        #expect(probe.width == 32 && probe.height == 24)
        #expect(probe.frames == frames)
        #expect(probe.rate == expectedRate)
    }
}

/// What ffprobe says about a file's video stream.
struct FFprobe {
    var codec: String, width: Int, height: Int, frames: Int, rate: String, errors: String

    static func run(_ ffprobe: String, _ path: String) throws -> FFprobe {
        let result = try runProgram(
            ffprobe,
            [
                "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                "stream=codec_name,width,height,nb_read_frames,r_frame_rate", "-of", "json", path,
            ])
        let errors = result.stderr
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let stream = (json?["streams"] as? [[String: Any]])?.first ?? [:]
        return FFprobe(
            codec: stream["codec_name"] as? String ?? "", width: stream["width"] as? Int ?? 0,
            height: stream["height"] as? Int ?? 0, frames: Int(stream["nb_read_frames"] as? String ?? "") ?? -1,
            rate: stream["r_frame_rate"] as? String ?? "", errors: errors)
    }
}

@Suite struct StreamingErrorTests {
    @Test func aMissingCameraAndANonCameraAreTypedErrors() throws {
        #expect {
            _ = try VideoCaptureStream(path: "/dev/evcapture-no-such-video")
        } throws: { ($0 as? StreamingError)?.code == .deviceRemoved && "\($0)".contains("/dev/evcapture-no-such-video") }
        #expect {
            _ = try VideoCaptureStream(path: "/dev/null")
        } throws: { ($0 as? StreamingError)?.code == .notACaptureDevice }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The ring's stream fails the photo waiting for it with the camera's error, at once.
        let source = FrameSource(
            settings: StreamSettings(devicePath: "/dev/evcapture-no-such-video"), logger: testLogger)
        let started = ContinuousClock.now
        do {
            _ = try source.frame(nearest: Timestamp(microseconds: 0), timeout: .seconds(10))
            Issue.record("a photo without a camera succeeded")
        } catch {
            #expect(RecordingError.camera(error).code == "camera-removed")
            #expect(ContinuousClock.now - started < .seconds(5))
        }
        #expect(!source.isRunning)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }
}
