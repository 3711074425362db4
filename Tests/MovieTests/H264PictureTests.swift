import EvcaptureTesting
import Foundation
import Testing
import Vocabulary

@testable import Movie

/// A photo from a camera's H.264: the run from the IDR frame before the wanted frame decoded
/// with libavcodec, the last picture kept (docs/video.md#the-cameras-own-h264). Checked
/// against the ffmpeg CLI's own decoding of the same stream, byte for byte.
@Suite struct H264PictureTests {
    static let ffmpeg = "/usr/bin/ffmpeg"
    static let format = StreamFormat(width: 64, height: 48, pixelFormat: .h264, bytesPerLine: 0, framesPerSecond: 25)

    /// A 3 s libx264 stream (an IDR frame every 25, no B-frames) as access units, and its
    /// pictures as the ffmpeg CLI decodes them (YUV 4:2:0, packed).
    static func stream(_ dir: String) throws -> (units: [[UInt8]], pictures: [UInt8]) {
        for args in [
            [
                "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "3", "-c:v", "libx264", "-g", "25", "-bf",
                "0", "-pix_fmt", "yuv420p", "-x264-params", "aud=1", "-f", "h264", dir + "/camera.h264",
            ],
            ["-loglevel", "error", "-i", dir + "/camera.h264", "-f", "rawvideo", "-pix_fmt", "yuv420p", dir + "/pictures.yuv"],
        ] {
            let made = try runProgram(ffmpeg, args)
            guard made.succeeded else { throw SpawnError(what: "ffmpeg \(args.joined(separator: " ")): \(made)", errno: 0) }
        }
        let stream = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/camera.h264")))
        var starts: [Int] = []
        for i in 0..<(stream.count - 4)
        where stream[i] == 0 && stream[i + 1] == 0 && stream[i + 2] == 0 && stream[i + 3] == 1 && stream[i + 4] & 0x1F == 9 {
            starts.append(i)
        }
        let units = zip(starts, starts.dropFirst() + [stream.count]).map { Array(stream[$0..<$1]) }
        return (units, [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/pictures.yuv"))))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ffmpeg), "needs ffmpeg"))
    func aFrameIsDecodedFromTheKeyframeBeforeIt() throws {
        let dir = NSTemporaryDirectory() + "movie-h264-picture-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (units, pictures) = try Self.stream(dir)
        #expect(units.count == 75)
        let size = 64 * 48 * 3 / 2
        #expect(pictures.count == 75 * size)
        func frame(_ k: Int) -> VideoFrame {
            VideoFrame(bytes: units[k], format: Self.format, sequence: UInt32(k), timestampMicroseconds: Int64(k) * 40_000)
        }
        // Frame 37 from the IDR frame 25: ffmpeg's picture 37, with frame 37's time.
        for (first, last) in [(25, 37), (25, 25), (50, 74), (0, 24)] {
            let picture = try H264Picture.decode((first...last).map(frame))
            #expect(picture.format.pixelFormat == .yuv420 && picture.format.width == 64 && picture.format.height == 48)
            #expect(
                picture.format.bytesPerLine == 64 && picture.timestampMicroseconds == Int64(last) * 40_000
                    && picture.sequence == UInt32(last))
            #expect(picture.bytes == Array(pictures[last * size..<(last + 1) * size]), "picture \(last) from \(first)")
        }
        // Without a keyframe first, or with nothing: an error, never a wrong picture.
        #expect(throws: MovieError.self) { try H264Picture.decode((26...30).map(frame)) }
        #expect(throws: MovieError.self) { try H264Picture.decode([]) }
    }
}
