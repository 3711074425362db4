@testable import LiveView
import Vocabulary
import Testing

@Suite struct FramingTests {
    @Test func aPartCarriesItsLengthAndKernelTime() {
        let header = Framing.partHeader(length: 1234, time: Timestamp(microseconds: 12_345_678), sequence: 7)
        #expect(
            header
                == "--evcaptureframe\r\nContent-Type: image/jpeg\r\nContent-Length: 1234\r\nX-Timestamp: 12.345678\r\nX-Sequence: 7\r\n\r\n"
        )
        #expect(Framing.streamContentType == "multipart/x-mixed-replace; boundary=evcaptureframe")
        #expect(Framing.timestamp(Timestamp(microseconds: 5_000_001)) == "5.000001")
    }

    @Test func anEventIsOneDataLinePerLine() {
        #expect(Framing.event(#"{"event":"capture"}"#) == "data: {\"event\":\"capture\"}\n\n")
        #expect(Framing.event("a\nb") == "data: a\ndata: b\n\n")
    }

    @Test func yuyvIsScaledByAWholeFactor() {
        // 4×2 image: pixels Y = 10·x + 100·y, U = 1+y, V = 2+y per pair.
        var src: [UInt8] = []
        for y in 0..<2 {
            for pair in 0..<2 {
                src += [UInt8(20 * pair + 100 * y), UInt8(1 + y), UInt8(20 * pair + 10 + 100 * y), UInt8(2 + y)]
            }
        }
        let (out, w, h) = downscaleYUYV(src, width: 4, height: 2, bytesPerLine: 8, by: 2)
        #expect(w == 2 && h == 1)
        // Pixels 0 and 2 of row 0, the chroma of pixel 0's pair.
        #expect(out == [0, 1, 20, 2])
    }
}
