import EvcaptureTesting
import Testing
import Vocabulary

@testable import LiveView
import Recording

/// The live view's preview of uncompressed frames: scaled down by a whole factor, then
/// encoded, keeping the picture.
@Suite struct PreviewFormatTests {
    @Test(arguments: [PixelFormat.yuyv, .yuv420, .nv12, .rgb24, .bgr24])
    func aLargeFrameIsScaledDownAndKeepsItsColours(_ pixelFormat: PixelFormat) throws {
        for (width, height, previewWidth, want) in [(640, 480, 160, (160, 120)), (150, 99, 64, (50, 33)), (64, 48, 640, (64, 48))] {
            let frame = RawFrames.frame(
                pixelFormat, width: width, height: height, padding: 10, colour: RawFrames.quadrants(width: width, height: height))
            let image = try JPEG.rgb(PreviewFeed.jpeg(frame, previewWidth: previewWidth, quality: 95))
            // YUYV keeps an even width.
            let wantWidth = pixelFormat == .yuyv && want.0 != width ? want.0 & ~1 : want.0
            #expect(image.width == wantWidth && image.height == want.1, "\(pixelFormat) \(width)x\(height): \(image.width)x\(image.height)")
            for (q, (fx, fy)) in [(1, 1), (3, 1), (1, 3), (3, 3)].enumerated() {
                let (x, y) = (image.width * fx / 4, image.height * fy / 4)
                let i = (y * image.width + x) * 3
                let c = RawFrames.quadrantColours[q]
                let got = (Int(image.pixels[i]), Int(image.pixels[i + 1]), Int(image.pixels[i + 2]))
                #expect(
                    abs(got.0 - Int(c.r)) <= 20 && abs(got.1 - Int(c.g)) <= 20 && abs(got.2 - Int(c.b)) <= 20,
                    "\(pixelFormat) \(width)x\(height) at (\(x), \(y)): \(got), want \(c)")
            }
        }
    }

    @Test(arguments: [PixelFormat.yuv420, .nv12, .rgb24, .bgr24])
    func aShortFrameIsAnErrorNotACrash(_ pixelFormat: PixelFormat) {
        var frame = RawFrames.frame(pixelFormat, width: 640, height: 480) { _, _ in (1, 2, 3) }
        frame.bytes.removeLast(641)
        #expect(throws: JPEGError.self) { try PreviewFeed.jpeg(frame, previewWidth: 160, quality: 75) }
    }
}
