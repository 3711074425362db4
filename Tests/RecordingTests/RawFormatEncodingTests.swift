import EvcaptureTesting
import Testing
import Vocabulary

@testable import Movie
@testable import Recording

/// Uncompressed camera formats (YUYV, YU12, NV12, RGB3, BGR3) through the encoders every
/// ring frame meets: JPEG for photos, the AVI and the live view, and the H.264 converter.
@Suite struct RawFormatEncodingTests {
    static let formats: [PixelFormat] = [.yuyv, .yuv420, .nv12, .rgb24, .bgr24]

    /// The decoded JPEG's colour at (x, y) is within `tolerance` of `want` in each channel.
    static func expectColour(
        _ image: (width: Int, height: Int, pixels: [UInt8]), _ x: Int, _ y: Int, _ want: RawFrames.RGB, tolerance: Int,
        _ what: String
    ) {
        let i = (y * image.width + x) * 3
        let got = (Int(image.pixels[i]), Int(image.pixels[i + 1]), Int(image.pixels[i + 2]))
        #expect(
            abs(got.0 - Int(want.r)) <= tolerance && abs(got.1 - Int(want.g)) <= tolerance && abs(got.2 - Int(want.b)) <= tolerance,
            "\(what): pixel (\(x), \(y)) is \(got), want \(want)")
    }

    @Test(arguments: formats)
    func aFrameEncodesToAJPEGOfItsSizeAndColours(_ pixelFormat: PixelFormat) throws {
        // Even and odd sizes, rows exactly as long as the pixels and with spare bytes.
        for (width, height) in [(64, 48), (33, 17), (18, 26)] {
            for padding in [0, 13] {
                let what = "\(pixelFormat) \(width)x\(height) padding \(padding)"
                let frame = RawFrames.frame(
                    pixelFormat, width: width, height: height, padding: padding,
                    colour: RawFrames.quadrants(width: width, height: height))
                let image = try JPEG.rgb(JPEG.data(from: frame, quality: 100))
                #expect(image.width == width && image.height == height, "\(what): \(image.width)x\(image.height)")
                let (bx, by) = ((width / 2) & ~1, (height / 2) & ~1)
                // The middle of each quadrant, away from the borders' blending.
                let spots = [
                    (bx / 2, by / 2), ((bx + width) / 2, by / 2), (bx / 2, (by + height) / 2), ((bx + width) / 2, (by + height) / 2),
                ]
                for (q, (x, y)) in spots.enumerated() {
                    Self.expectColour(image, x, y, RawFrames.quadrantColours[q], tolerance: 14, what)
                }
            }
        }
    }

    @Test(arguments: formats)
    func theSmallestFrameEncodes(_ pixelFormat: PixelFormat) throws {
        for (width, height) in [(1, 1), (1, 2), (2, 1), (3, 3)] {
            let frame = RawFrames.frame(pixelFormat, width: width, height: height, padding: 3) { _, _ in (200, 60, 90) }
            let image = try JPEG.rgb(JPEG.data(from: frame, quality: 100))
            #expect(image.width == width && image.height == height)
            Self.expectColour(image, width - 1, height - 1, (200, 60, 90), tolerance: 10, "\(pixelFormat) \(width)x\(height)")
        }
    }

    @Test(arguments: formats)
    func aFrameShorterThanItsGeometryIsAnErrorNamingIt(_ pixelFormat: PixelFormat) throws {
        var frame = RawFrames.frame(pixelFormat, width: 32, height: 24, padding: 8) { _, _ in (10, 20, 30) }
        #expect(throws: Never.self) { try JPEG.data(from: frame) }
        for count in [frame.bytes.count - 1, 100, 0] {
            frame.bytes = Array(frame.bytes.prefix(count))
            let error = #expect(throws: JPEGError.self) { try JPEG.data(from: frame) }
            #expect(
                error?.message.contains("too short for 32x24") == true && error?.message.contains("\(pixelFormat)") == true,
                "\(String(describing: error))")
            #expect(throws: MovieError.self) {
                try FrameConverter(format: frame.format, crop: CropRect(width: 32, height: 24, zoom: 1)).convert(frame.bytes)
            }
        }
    }

    @Test func rowsShorterThanTheWidthAreAnError() {
        for pixelFormat in Self.formats {
            let per = pixelFormat.lumaBytesPerPixel!
            let frame = VideoFrame(
                bytes: [UInt8](repeating: 0, count: 4096),
                format: StreamFormat(width: 16, height: 8, pixelFormat: pixelFormat, bytesPerLine: 16 * per - 1))
            #expect(throws: JPEGError.self, "\(pixelFormat)") { try JPEG.data(from: frame) }
            #expect(throws: MovieError.self, "\(pixelFormat)") {
                try FrameConverter(format: frame.format, crop: CropRect(width: 16, height: 8, zoom: 1))
            }
        }
        let grey = VideoFrame(
            bytes: [UInt8](repeating: 0, count: 4096),
            format: StreamFormat(width: 16, height: 8, pixelFormat: PixelFormat(fourCC: "GREY"), bytesPerLine: 16))
        let error = #expect(throws: JPEGError.self) { try JPEG.data(from: grey) }
        #expect(error?.message.contains("GREY") == true)
    }

    /// libswscale's YUV 4:2:0 picture (limited-range BT.601) has each quadrant's colour,
    /// whatever the camera's layout, also for a digital zoom's crop.
    @Test(arguments: formats)
    func theH264ConverterKeepsTheColours(_ pixelFormat: PixelFormat) throws {
        let (width, height) = (64, 48)
        let frame = RawFrames.frame(
            pixelFormat, width: width, height: height, padding: 6, colour: RawFrames.quadrants(width: width, height: height))
        for crop in [CropRect(width: width, height: height, zoom: 1), CropRect(width: width, height: height, zoom: 2)] {
            let converter = try FrameConverter(format: frame.format, crop: crop)
            try converter.convert(frame.bytes)
            let p = converter.picture.pointee
            #expect(Int(p.width) == crop.width && Int(p.height) == crop.height)
            let ys = p.linesize.0, us = p.linesize.1, vs = p.linesize.2
            for (q, (fx, fy)) in [(24, 18), (40, 18), (24, 30), (40, 30)].enumerated() {
                let (x, y) = (fx - crop.x, fy - crop.y)
                let c = RawFrames.quadrantColours[q]
                let (r, g, b) = (Double(c.r), Double(c.g), Double(c.b))
                // What a limited-range (studio swing) BT.601 encoder gives this colour.
                let wantY = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
                let wantU = 128 + (-37.797 * r - 74.203 * g + 112 * b) / 255
                let wantV = 128 + (112 * r - 93.786 * g - 18.214 * b) / 255
                // YUV cameras' samples go through unchanged (their range is the camera's).
                let (full, cb, cr) = RawFrames.ycbcr(c)
                let raw = pixelFormat == .yuv420 || pixelFormat == .nv12 || pixelFormat == .yuyv
                let want = raw ? (Double(full), Double(cb), Double(cr)) : (wantY, wantU, wantV)
                let gotY = Double(p.data.0![y * Int(ys) + x])
                let gotU = Double(p.data.1![(y / 2) * Int(us) + x / 2])
                let gotV = Double(p.data.2![(y / 2) * Int(vs) + x / 2])
                let what = "\(pixelFormat) crop \(crop) at (\(fx), \(fy)): \(gotY) \(gotU) \(gotV), want \(want)"
                #expect(abs(gotY - want.0) <= 4 && abs(gotU - want.1) <= 4 && abs(gotV - want.2) <= 4, "\(what)")
            }
        }
    }

    @Test func pixelFormatsAndTheirLayouts() {
        #expect(
            PixelFormat.captureOrder.map(\.description) == ["MJPG", "JPEG", "YUYV", "YU12", "NV12", "RGB3", "BGR3"])
        // 5x3 YU12 with 6-byte rows: chroma 3x2 with 3-byte rows after the 18-byte Y plane.
        let i420 = StreamFormat(width: 5, height: 3, pixelFormat: .yuv420, bytesPerLine: 6)
        #expect(i420.planes?.map(\.offset) == [0, 18, 24] && i420.planes?.map(\.bytesPerLine) == [6, 3, 3])
        #expect(i420.minimumFrameBytes == 24 + 3 + 3)
        let nv12 = StreamFormat(width: 5, height: 3, pixelFormat: .nv12, bytesPerLine: 8)
        #expect(nv12.planes?.map(\.offset) == [0, 24] && nv12.minimumFrameBytes == 24 + 8 + 6)
        let rgb = StreamFormat(width: 5, height: 3, pixelFormat: .rgb24, bytesPerLine: 16)
        #expect(rgb.minimumFrameBytes == 32 + 15)
        #expect(StreamFormat(width: 5, height: 3, pixelFormat: .mjpeg, bytesPerLine: 0).planes == nil)
        #expect(StreamFormat(width: 0, height: 3, pixelFormat: .rgb24, bytesPerLine: 16).planes == nil)
    }
}
