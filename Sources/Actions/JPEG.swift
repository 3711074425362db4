import CLibjpeg
import V4L2

#if canImport(Glibc)
import Glibc
import Capture
import Evdev
import LinuxIO
#endif

/// A JPEG encoding or decoding failure reported by libjpeg.
public struct JPEGError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "JPEG: \(message)" }
}

/// JPEG encoding (YUYV frames) and checking, through libjpeg-turbo.
public enum JPEG {
    /// What a successful decode found.
    public struct ImageInfo: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var components: Int
        /// libjpeg warnings (e.g. "premature end of data"): non-zero means a damaged image.
        public var warnings: Int
    }

    /// Encodes a YUYV 4:2:2 image (`bytesPerLine` ≥ 2 × `width`).
    public static func encodeYUYV(
        _ yuyv: [UInt8], width: Int, height: Int, bytesPerLine: Int, quality: Int = 90
    ) throws(JPEGError) -> [UInt8] {
        guard width > 0, height > 0, bytesPerLine >= ((width + 1) / 2) * 4 else {
            throw JPEGError("bad YUYV geometry \(width)x\(height), \(bytesPerLine) bytes per line")
        }
        guard yuyv.count >= bytesPerLine * (height - 1) + ((width + 1) / 2) * 4 else {
            throw JPEGError("YUYV frame of \(yuyv.count) bytes is too short for \(width)x\(height)")
        }
        var out: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        var message = [CChar](repeating: 0, count: 256)
        let rc = yuyv.withUnsafeBufferPointer { src in
            evc_jpeg_encode_yuyv(
                src.baseAddress, Int32(width), Int32(height), Int32(bytesPerLine), Int32(min(max(quality, 1), 100)),
                &out, &size, &message, message.count)
        }
        defer { free(out) }
        guard rc == 0, let out else { throw JPEGError(String(cString: message)) }
        return [UInt8](UnsafeBufferPointer(start: out, count: Int(size)))
    }

    /// Decodes the whole image (pixels are discarded) and returns its size.
    public static func decode(_ data: [UInt8]) throws(JPEGError) -> ImageInfo {
        guard data.count >= 4, data[0] == 0xFF, data[1] == 0xD8 else { throw JPEGError("no JPEG start-of-image marker") }
        var w: Int32 = 0, h: Int32 = 0, c: Int32 = 0, warnings: Int32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let rc = data.withUnsafeBufferPointer { src in
            evc_jpeg_decode_check(src.baseAddress, UInt(src.count), &w, &h, &c, &warnings, &message, message.count)
        }
        guard rc == 0 else { throw JPEGError(String(cString: message)) }
        return ImageInfo(width: Int(w), height: Int(h), components: Int(c), warnings: Int(warnings))
    }

    /// The frame as a JPEG file's bytes: MJPEG/JPEG frames pass through (after a check of
    /// the start-of-image marker), YUYV frames are encoded.
    public static func data(from frame: VideoFrame, quality: Int = 90) throws(JPEGError) -> [UInt8] {
        let format = frame.format
        if format.pixelFormat.isJPEG {
            guard frame.bytes.count >= 4, frame.bytes[0] == 0xFF, frame.bytes[1] == 0xD8 else {
                throw JPEGError("camera frame (\(format.pixelFormat)) does not start with a JPEG marker")
            }
            return frame.bytes
        }
        guard format.pixelFormat == .yuyv else { throw JPEGError("cannot encode pixel format \(format.pixelFormat)") }
        return try encodeYUYV(
            frame.bytes, width: format.width, height: format.height, bytesPerLine: format.bytesPerLine, quality: quality)
    }
}
