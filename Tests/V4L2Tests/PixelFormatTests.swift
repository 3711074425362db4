import CLinuxShims
import Testing
import Vocabulary

/// The floor's pixel formats (Vocabulary, by their four characters) are the fourccs of
/// linux/videodev2.h.
@Suite struct PixelFormatTests {
    @Test func fourCCsAreTheHeadersValues() {
        #expect(PixelFormat.mjpeg.rawValue == EVC_V4L2_PIX_FMT_MJPEG)
        #expect(PixelFormat.jpeg.rawValue == EVC_V4L2_PIX_FMT_JPEG)
        #expect(PixelFormat.yuyv.rawValue == EVC_V4L2_PIX_FMT_YUYV)
        #expect(PixelFormat.mjpeg.description == "MJPG")
    }
}
