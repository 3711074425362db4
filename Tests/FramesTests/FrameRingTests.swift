import Foundation
import Testing
import Frames
import Recording

/// The ring's size and the photos' EXIF, without a camera (the VM's system tests stream).
@Suite struct FrameRingTests {
    @Test func theRingKeepsItsSecondsWithinItsMemory() {
        let vga = 640 * 2 * 480  // YUYV 640×480
        // 2 s at 30 fps (+2 spare) fits in 64 MB.
        #expect(RingLimits(seconds: 2, memoryBytes: 64 << 20).slots(frameBytes: vga, fps: 30) == 62)
        // The memory limit wins: 4 MB hold 6 such frames.
        #expect(RingLimits(seconds: 2, memoryBytes: 4 << 20).slots(frameBytes: vga, fps: 30) == 6)
        // Never fewer than 2 (one being written, one to read), never fewer than 3 when affordable.
        #expect(RingLimits(seconds: 2, memoryBytes: 1).slots(frameBytes: vga, fps: 30) == 2)
        #expect(RingLimits(seconds: 0.01, memoryBytes: 64 << 20).slots(frameBytes: vga, fps: 30) == 3)
        // Without a nominal rate, 30 fps is assumed.
        #expect(RingLimits(seconds: 1, memoryBytes: 64 << 20).slots(frameBytes: 1000, fps: nil) == 32)
    }

    @Test func aPhotoCarriesTheMomentOfItsFrameInEXIF() throws {
        var yuyv = [UInt8](repeating: 0x80, count: 64 * 2 * 48)
        for i in stride(from: 0, to: yuyv.count, by: 2) { yuyv[i] = UInt8(i % 251) }
        let jpeg = try JPEG.encodeYUYV(yuyv, width: 64, height: 48, bytesPerLine: 128)
        #expect(JPEG.captureTime(of: jpeg) == nil)
        let moment = 1_763_769_599.123456  // 2025-11-21 23:59:59.123456 UTC
        let tagged = try JPEG.withCaptureTime(jpeg, wallSeconds: moment)
        let (date, sub) = JPEG.exifTime(moment)
        let exif = try #require(JPEG.captureTime(of: tagged))
        #expect(exif.dateTime == date && exif.subsec == sub && sub == "123456")
        // Still the same image: it decodes, and the frame's bytes follow the EXIF segment unchanged.
        #expect(try JPEG.decode(tagged).width == 64)
        #expect(Array(tagged.suffix(jpeg.count - 2)) == Array(jpeg.dropFirst(2)))
        // Microseconds that round up to the next second carry into it.
        #expect(JPEG.exifTime(1_763_769_599.9999996).1 == "000000")
    }

    @Test func notAJPEGIsAnError() {
        #expect(throws: JPEGError.self) { try JPEG.withCaptureTime([0x00, 0x01, 0x02, 0x03], wallSeconds: 0) }
    }
}
