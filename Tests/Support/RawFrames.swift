import Vocabulary

/// Synthetic uncompressed camera frames: a picture given as a colour for each pixel, laid out
/// in a V4L2 format with padded rows, for tests of the encoders.
public enum RawFrames {
    public typealias RGB = (r: UInt8, g: UInt8, b: UInt8)

    /// Four quadrants: red, green (top), blue, yellow (bottom); the borders at even pixels.
    public static let quadrantColours: [RGB] = [(220, 30, 30), (30, 200, 40), (30, 40, 210), (230, 220, 40)]

    /// The quadrant pattern's colour at a pixel of a `width`×`height` picture.
    public static func quadrants(width: Int, height: Int) -> (Int, Int) -> RGB {
        let (bx, by) = (max(2, (width / 2) & ~1), max(2, (height / 2) & ~1))
        return { x, y in quadrantColours[(y >= by ? 2 : 0) + (x >= bx ? 1 : 0)] }
    }

    /// JPEG's (JFIF) full-range BT.601 Y, Cb, Cr of a colour.
    public static func ycbcr(_ c: RGB) -> (UInt8, UInt8, UInt8) {
        let (r, g, b) = (Double(c.r), Double(c.g), Double(c.b))
        func clamp(_ v: Double) -> UInt8 { UInt8(max(0, min(255, v.rounded()))) }
        return (
            clamp(0.299 * r + 0.587 * g + 0.114 * b), clamp(128 - 0.168736 * r - 0.331264 * g + 0.5 * b),
            clamp(128 + 0.5 * r - 0.418688 * g - 0.081312 * b)
        )
    }

    /// The picture in `pixelFormat` (YUYV, YU12, NV12, RGB3 or BGR3) with `padding` spare
    /// bytes at the end of each row; chroma comes from each pair's or block's top-left pixel.
    /// Padding bytes are 0x55 (they must not show).
    public static func frame(
        _ pixelFormat: PixelFormat, width: Int, height: Int, padding: Int = 0, colour: (Int, Int) -> RGB
    ) -> VideoFrame {
        let bpl = width * (pixelFormat.lumaBytesPerPixel ?? 1) + (pixelFormat == .yuyv ? (width & 1) * 2 : 0) + padding
        let format = StreamFormat(width: width, height: height, pixelFormat: pixelFormat, bytesPerLine: bpl)
        let planes = format.planes!
        var b = [UInt8](repeating: 0x55, count: format.minimumFrameBytes!)
        for y in 0..<height {
            for x in 0..<width {
                let c = colour(x, y)
                let (_, cb, cr) = ycbcr(colour(x & ~1, y & ~1))
                let p = planes[0]
                switch pixelFormat {
                case .rgb24: (b[y * bpl + x * 3], b[y * bpl + x * 3 + 1], b[y * bpl + x * 3 + 2]) = (c.r, c.g, c.b)
                case .bgr24: (b[y * bpl + x * 3], b[y * bpl + x * 3 + 1], b[y * bpl + x * 3 + 2]) = (c.b, c.g, c.r)
                case .yuyv:
                    let group = y * bpl + (x / 2) * 4
                    b[group + (x & 1) * 2] = ycbcr(c).0
                    (b[group + 1], b[group + 3]) = (ycbcr(colour(x & ~1, y)).1, ycbcr(colour(x & ~1, y)).2)
                    if x == width - 1 && x & 1 == 0 { b[group + 2] = ycbcr(c).0 }
                default:
                    b[p.offset + y * p.bytesPerLine + x] = ycbcr(c).0
                    guard x & 1 == 0, y & 1 == 0 else { continue }
                    let c1 = planes[1]
                    if pixelFormat == .nv12 {
                        (b[c1.offset + (y / 2) * c1.bytesPerLine + x], b[c1.offset + (y / 2) * c1.bytesPerLine + x + 1]) = (cb, cr)
                    } else {
                        let c2 = planes[2]
                        b[c1.offset + (y / 2) * c1.bytesPerLine + x / 2] = cb
                        b[c2.offset + (y / 2) * c2.bytesPerLine + x / 2] = cr
                    }
                }
            }
        }
        return VideoFrame(bytes: b, format: format)
    }
}

/// A YUYV test image: a horizontal luma ramp, chroma varying by row; rows padded to `stride`.
public func yuyvImage(width: Int, height: Int, stride rowBytes: Int, shade: Int = 0) -> [UInt8] {
    var bytes = [UInt8](repeating: 0x55, count: rowBytes * height)
    for y in 0..<height {
        for x in stride(from: 0, to: width, by: 2) {
            let o = y * rowBytes + x * 2
            bytes[o] = UInt8((x * 255 / max(width - 1, 1) + shade) & 0xFF)
            bytes[o + 1] = UInt8((y * 4) & 0xFF)
            bytes[o + 2] = UInt8(((x + 1) * 255 / max(width - 1, 1) + shade) & 0xFF)
            bytes[o + 3] = UInt8(255 - (y * 4) & 0xFF)
        }
    }
    return bytes
}

/// An AVI's (RIFF's) little-endian 32-bit field at offset `o`.
public func le32(_ b: [UInt8], _ o: Int) -> Int {
    Int(b[o]) | Int(b[o + 1]) << 8 | Int(b[o + 2]) << 16 | Int(b[o + 3]) << 24
}

/// An AVI's (RIFF's) four-character code at offset `o`.
public func fourCC(_ b: [UInt8], _ o: Int) -> String { String(decoding: b[o..<o + 4], as: UTF8.self) }
