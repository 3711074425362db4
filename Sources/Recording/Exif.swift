#if canImport(Glibc)
import Glibc
#endif
import CLibexif

extension JPEG {
    /// `jpeg` with an EXIF APP1 segment right after its start-of-image marker, carrying the
    /// moment its frame was taken: `DateTimeOriginal` (and `DateTime`, `DateTimeDigitized`)
    /// in local time with `SubSecTimeOriginal` in microseconds. Built by libexif; the frame's
    /// own bytes (MJPEG as the camera sent it) are not re-encoded.
    public static func withCaptureTime(_ jpeg: [UInt8], wallSeconds: Double) throws(JPEGError) -> [UInt8] {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { throw JPEGError("no JPEG start-of-image marker") }
        let (dateTime, subsec) = exifTime(wallSeconds)
        var block: UnsafeMutablePointer<UInt8>?
        var size: UInt32 = 0
        guard evc_exif_time_block(dateTime, subsec, &block, &size) == 0, let block else {
            throw JPEGError("libexif could not build the EXIF block")
        }
        defer { free(block) }
        let length = Int(size) + 2  // the segment length counts itself
        guard length <= 0xFFFF else { throw JPEGError("EXIF block of \(size) bytes is too long") }
        var out: [UInt8] = []
        out.reserveCapacity(jpeg.count + length + 2)
        out += [0xFF, 0xD8, 0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)]
        out += UnsafeBufferPointer(start: block, count: Int(size))
        out += jpeg[2...]
        return out
    }

    /// `DateTimeOriginal` and `SubSecTimeOriginal` of a JPEG, when it has them.
    public static func captureTime(of jpeg: [UInt8]) -> (dateTime: String, subsec: String)? {
        var d = [CChar](repeating: 0, count: 64), s = [CChar](repeating: 0, count: 32)
        let rc = jpeg.withUnsafeBufferPointer { evc_exif_read_original($0.baseAddress, UInt32($0.count), &d, d.count, &s, s.count) }
        guard rc == 0 else { return nil }
        return (String(cString: d), String(cString: s))
    }

    /// EXIF's local "YYYY:MM:DD HH:MM:SS" and six digits of microseconds.
    public static func exifTime(_ wallSeconds: Double) -> (String, String) {
        var seconds = time_t(wallSeconds.rounded(.down))
        var micros = Int(((wallSeconds - Double(seconds)) * 1_000_000).rounded())
        if micros >= 1_000_000 {
            seconds += 1
            micros -= 1_000_000
        }
        var t = tm()
        localtime_r(&seconds, &t)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let date = "\(t.tm_year + 1900):\(two(t.tm_mon + 1)):\(two(t.tm_mday)) \(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec))"
        let sub = String(micros)
        return (date, String(repeating: "0", count: 6 - sub.count) + sub)
    }
}
