import CLibjpeg
import CLibturbojpeg
import Vocabulary

#if canImport(Glibc)
import Glibc
#endif

/// JPEG encoding (uncompressed frames) and checking, through libjpeg-turbo.
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
        // TurboJPEG's worst case for a 4:2:0 image of this size (what the encoder writes):
        // never reached by a real image, only by a bug.
        let limit = tjBufSize(Int32(width), Int32(height), Int32(TJSAMP_420.rawValue))
        let rc = yuyv.withUnsafeBufferPointer { src in
            evc_jpeg_encode_yuyv(
                src.baseAddress, Int32(width), Int32(height), Int32(bytesPerLine), Int32(min(max(quality, 1), 100)), limit,
                &out, &size, &message, message.count)
        }
        defer { free(out) }
        guard rc == 0, let out else { throw JPEGError(String(cString: message)) }
        return [UInt8](UnsafeBufferPointer(start: out, count: Int(size)))
    }

    /// Encodes an uncompressed frame: YUYV (through libjpeg), YU12 and NV12 (their 4:2:0
    /// planes as they are, through TurboJPEG's planar YUV encoder), RGB3 and BGR3 (through
    /// `tjCompress2`, to 4:2:0). Rows may be padded (`format.bytesPerLine`); a frame shorter
    /// than its geometry needs is an error.
    public static func encode(_ bytes: [UInt8], format: StreamFormat, quality: Int = 90) throws(JPEGError) -> [UInt8] {
        let (w, h) = (format.width, format.height)
        guard format.pixelFormat != .h264 else {
            // An access unit is no picture by itself (it refers to the frames before it).
            throw JPEGError(
                "cannot make a JPEG from an H.264 access unit: its picture is decoded from the keyframe before it first (docs/video.md#the-cameras-own-h264)"
            )
        }
        guard let planes = format.planes, let minimum = format.minimumFrameBytes else {
            throw JPEGError(
                "cannot encode \(format.pixelFormat) frames of \(w)x\(h), \(format.bytesPerLine) bytes per line")
        }
        guard bytes.count >= minimum else {
            throw JPEGError("\(format.pixelFormat) frame of \(bytes.count) bytes is too short for \(w)x\(h) (\(minimum) needed)")
        }
        let q = Int32(min(max(quality, 1), 100))
        switch format.pixelFormat {
        case .yuyv:
            return try encodeYUYV(bytes, width: w, height: h, bytesPerLine: format.bytesPerLine, quality: quality)
        case .rgb24, .bgr24:
            let order = format.pixelFormat == .rgb24 ? TJPF_RGB : TJPF_BGR
            return try turbo("\(format.pixelFormat)") { handle, out, size in
                bytes.withUnsafeBufferPointer {
                    tjCompress2(
                        handle, $0.baseAddress, Int32(w), Int32(format.bytesPerLine), Int32(h), Int32(order.rawValue), out, size,
                        Int32(TJSAMP_420.rawValue), q, 0)
                }
            }
        case .yuv420:
            return try encodeI420(bytes, planes[0], bytes, planes[1], planes[2], width: w, height: h, quality: q)
        case .nv12:
            // TurboJPEG takes separate Cb and Cr planes: split the interleaved pairs.
            let c = planes[1]
            let cw = c.rowBytes / 2
            var split = [UInt8](repeating: 0, count: cw * c.rows * 2)
            split.withUnsafeMutableBufferPointer { dst in
                bytes.withUnsafeBufferPointer { src in
                    for y in 0..<c.rows {
                        let row = c.offset + y * c.bytesPerLine
                        for x in 0..<cw {
                            dst[y * cw + x] = src[row + 2 * x]
                            dst[(c.rows + y) * cw + x] = src[row + 2 * x + 1]
                        }
                    }
                }
            }
            let cb = FramePlane(offset: 0, bytesPerLine: cw, rows: c.rows, rowBytes: cw)
            var cr = cb
            cr.offset = cw * c.rows
            return try encodeI420(bytes, planes[0], split, cb, cr, width: w, height: h, quality: q)
        default:
            throw JPEGError("cannot encode pixel format \(format.pixelFormat)")
        }
    }

    /// 4:2:0 planes (Y from `luma`, Cb and Cr from `chroma`) through `tjCompressFromYUVPlanes`.
    private static func encodeI420(
        _ luma: [UInt8], _ y: FramePlane, _ chroma: [UInt8], _ cb: FramePlane, _ cr: FramePlane, width: Int, height: Int,
        quality: Int32
    ) throws(JPEGError) -> [UInt8] {
        try turbo("YUV 4:2:0") { handle, out, size in
            luma.withUnsafeBufferPointer { l in
                chroma.withUnsafeBufferPointer { c in
                    var planes: [UnsafePointer<UInt8>?] = [
                        l.baseAddress! + y.offset, c.baseAddress! + cb.offset, c.baseAddress! + cr.offset,
                    ]
                    let strides: [Int32] = [Int32(y.bytesPerLine), Int32(cb.bytesPerLine), Int32(cr.bytesPerLine)]
                    return tjCompressFromYUVPlanes(
                        handle, &planes, Int32(width), strides, Int32(height), Int32(TJSAMP_420.rawValue), out, size, quality, 0)
                }
            }
        }
    }

    /// Runs one TurboJPEG compression and copies its output (freed with `tjFree`).
    private static func turbo(
        _ what: String,
        _ compress: (tjhandle, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<UInt>) -> Int32
    ) throws(JPEGError) -> [UInt8] {
        guard let handle = tjInitCompress() else { throw JPEGError("encoding \(what): tjInitCompress failed") }
        defer { tjDestroy(handle) }
        var out: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let rc = compress(handle, &out, &size)
        defer { if let out { tjFree(out) } }
        guard rc == 0, let out else { throw JPEGError("encoding \(what): \(String(cString: tjGetErrorStr2(handle)))") }
        return [UInt8](UnsafeBufferPointer(start: out, count: Int(size)))
    }

    /// The image decoded to packed R G B bytes, row after row: for checks of what an
    /// encoder kept.
    public static func rgb(_ jpeg: [UInt8]) throws(JPEGError) -> (width: Int, height: Int, pixels: [UInt8]) {
        try pixels(jpeg, TJPF_RGB, bytesPerPixel: 3)
    }

    /// The image decoded by libturbojpeg to `format`, row after row.
    static func pixels(_ jpeg: [UInt8], _ format: TJPF, bytesPerPixel: Int) throws(JPEGError) -> (width: Int, height: Int, pixels: [UInt8])
    {
        guard let handle = tjInitDecompress() else { throw JPEGError("tjInitDecompress failed") }
        defer { tjDestroy(handle) }
        var width: Int32 = 0, height: Int32 = 0, subsamp: Int32 = 0, colorspace: Int32 = 0
        let header = jpeg.withUnsafeBufferPointer {
            tjDecompressHeader3(handle, $0.baseAddress, UInt(jpeg.count), &width, &height, &subsamp, &colorspace)
        }
        guard header == 0 else { throw JPEGError("reading the JPEG header: \(String(cString: tjGetErrorStr2(handle)))") }
        var pixels = [UInt8](repeating: 0, count: Int(width) * Int(height) * bytesPerPixel)
        let status = jpeg.withUnsafeBufferPointer { src in
            pixels.withUnsafeMutableBufferPointer {
                tjDecompress2(handle, src.baseAddress, UInt(jpeg.count), $0.baseAddress, width, 0, height, Int32(format.rawValue), 0)
            }
        }
        guard status == 0 else { throw JPEGError("decoding: \(String(cString: tjGetErrorStr2(handle)))") }
        return (Int(width), Int(height), pixels)
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
    /// the start-of-image marker), uncompressed frames are encoded (``encode(_:format:quality:)``).
    public static func data(from frame: VideoFrame, quality: Int = 90) throws(JPEGError) -> [UInt8] {
        let format = frame.format
        if format.pixelFormat.isJPEG {
            guard frame.bytes.count >= 4, frame.bytes[0] == 0xFF, frame.bytes[1] == 0xD8 else {
                throw JPEGError("camera frame (\(format.pixelFormat)) does not start with a JPEG marker")
            }
            return frame.bytes
        }
        return try encode(frame.bytes, format: format, quality: quality)
    }
}
