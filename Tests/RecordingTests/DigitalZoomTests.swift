import Vocabulary
import Testing
import EvcaptureTesting
import Recording

/// Digital zoom (docs/behaviour.md#photos-and-videos) for cameras without `zoom_absolute` — a lossless crop
/// around the centre (libjpeg-turbo's tjTransform, TJXOPT_CROP), no re-encoding.
@Suite struct DigitalZoomTests {
    @Test func theRegionIsTheCentreOnTheMCUGrid() {
        // 4:2:2 (YUYV): MCUs of 16×8.
        #expect(JPEGCrop.region(width: 320, height: 240, factor: 2, mcuWidth: 16, mcuHeight: 8) == (80, 64, 160, 120))
        #expect(JPEGCrop.region(width: 640, height: 480, factor: 1, mcuWidth: 16, mcuHeight: 16) == (0, 0, 640, 480))
        let r = JPEGCrop.region(width: 1280, height: 720, factor: 4, mcuWidth: 16, mcuHeight: 16)
        #expect(r == (480, 272, 320, 180))
        // Never outside the image, never smaller than one MCU.
        let tiny = JPEGCrop.region(width: 20, height: 10, factor: 4, mcuWidth: 16, mcuHeight: 8)
        #expect(tiny.x >= 0 && tiny.x + tiny.width <= 20 && tiny.width >= 1 && tiny.y + tiny.height <= 10)
    }

    /// A photo at 2× is the centre half of the frame: the same pixels, since the blocks are
    /// copied, not decoded and encoded again.
    @Test func aCropAtTwoTimesIsTheCentreHalfUnchanged() throws {
        let (w, h) = (320, 240)
        let jpeg = try JPEG.encodeYUYV(yuyvImage(width: w, height: h, stride: w * 2), width: w, height: h, bytesPerLine: w * 2, quality: 90)
        let cropped = try JPEGCrop.centre(jpeg, factor: 2)
        let whole = try JPEGCrop.grey(jpeg)
        let part = try JPEGCrop.grey(cropped)
        #expect(part.width == 160 && part.height == 120)
        let r = JPEGCrop.region(width: w, height: h, factor: 2, mcuWidth: 16, mcuHeight: 8)
        // Centred to within half an MCU.
        #expect(abs(r.x + r.width / 2 - w / 2) <= 8 && abs(r.y + r.height / 2 - h / 2) <= 4)
        var differing = 0
        for y in 0..<part.height {
            for x in 0..<part.width where part.pixels[y * part.width + x] != whole.pixels[(y + r.y) * w + x + r.x] {
                differing += 1
            }
        }
        #expect(differing == 0, "\(differing) pixels differ from the original's centre")
        #expect(try JPEG.decode(cropped).warnings == 0)
        #expect(try JPEGCrop.centre(jpeg, factor: 1) == jpeg)
        #expect(throws: JPEGError.self) { try JPEGCrop.centre([0xFF, 0xD8, 0, 1], factor: 2) }
    }

    @Test func withoutAZoomControlTheZoomSliderIsDigital() {
        let zoom = Control.digitalZoomSlider()
        #expect(zoom.name == "zoom" && zoom.binding.isDigitalZoom && zoom.binding.camera == nil)
        #expect(zoom.binding.systemKind == "zoom")
        #expect(zoom.scale == .continuous(range: 1...4, prominentValues: [2, 3]))
        #expect(zoom.value == 1 && zoom.displayValue == "1.0×")
    }
}
