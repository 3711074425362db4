#if canImport(Glibc)
import Glibc
#endif
import CLibturbojpeg

/// Digital zoom on JPEG images: a lossless crop around the centre with libjpeg-turbo's
/// `tjTransform` (`TJXOPT_CROP`). The compressed blocks are copied, never decoded and
/// encoded again, so a zoomed photo loses nothing but the border; the crop's left and top
/// edges fall on MCU boundaries (8 or 16 pixels), so the centre is kept to within half an MCU.
public enum JPEGCrop {
    /// The region of a `width`×`height` image that a zoom `factor` (≥ 1) keeps: 1/factor of
    /// each side around the centre, its origin rounded down to the MCU grid.
    public static func region(width: Int, height: Int, factor: Double, mcuWidth: Int, mcuHeight: Int)
        -> (x: Int, y: Int, width: Int, height: Int)
    {
        let f = max(1, factor)
        let w = max(mcuWidth, min(width, Int((Double(width) / f).rounded())))
        let h = max(mcuHeight, min(height, Int((Double(height) / f).rounded())))
        // Centre first, then snap the origin to the grid: nearest grid line, so the crop is off
        // centre by at most half an MCU.
        func snap(_ origin: Int, _ mcu: Int, _ size: Int, _ total: Int) -> Int {
            let snapped = Int((Double(origin) / Double(mcu)).rounded()) * mcu
            return max(0, min(snapped, (total - size) / mcu * mcu))
        }
        let x = snap((width - w) / 2, mcuWidth, w, width)
        let y = snap((height - h) / 2, mcuHeight, h, height)
        return (x, y, min(w, width - x), min(h, height - y))
    }

    /// The image cropped to its centre 1/`factor` (a factor of 1 or less returns it as is).
    public static func centre(_ jpeg: [UInt8], factor: Double) throws(JPEGError) -> [UInt8] {
        guard factor > 1.0001 else { return jpeg }
        guard let handle = tjInitTransform() else { throw JPEGError("digital zoom: tjInitTransform failed") }
        defer { tjDestroy(handle) }
        func failure(_ what: String) -> JPEGError {
            JPEGError("digital zoom: \(what): \(String(cString: tjGetErrorStr2(handle)))")
        }
        var width: Int32 = 0, height: Int32 = 0, subsamp: Int32 = 0, colorspace: Int32 = 0
        let header = jpeg.withUnsafeBufferPointer {
            tjDecompressHeader3(handle, $0.baseAddress, UInt(jpeg.count), &width, &height, &subsamp, &colorspace)
        }
        guard header == 0 else { throw failure("reading the JPEG header") }
        let r = region(
            width: Int(width), height: Int(height), factor: factor, mcuWidth: Int(evc_tj_mcu_width(subsamp)),
            mcuHeight: Int(evc_tj_mcu_height(subsamp)))
        var transform = tjtransform()
        transform.r = tjregion(x: Int32(r.x), y: Int32(r.y), w: Int32(r.width), h: Int32(r.height))
        transform.op = Int32(TJXOP_NONE.rawValue)
        transform.options = TJXOPT_CROP
        var out: UnsafeMutablePointer<UInt8>?
        var outSize: UInt = 0
        let status = jpeg.withUnsafeBufferPointer {
            tjTransform(handle, $0.baseAddress, UInt(jpeg.count), 1, &out, &outSize, &transform, 0)
        }
        defer { if let out { tjFree(out) } }
        guard status == 0, let out else { throw failure("cropping") }
        return Array(UnsafeBufferPointer(start: out, count: Int(outSize)))
    }

    /// Width and height from the JPEG header, nil if it has none.
    public static func size(of jpeg: [UInt8]) -> (width: Int, height: Int)? {
        guard let handle = tjInitDecompress() else { return nil }
        defer { tjDestroy(handle) }
        var width: Int32 = 0, height: Int32 = 0, subsamp: Int32 = 0, colorspace: Int32 = 0
        let header = jpeg.withUnsafeBufferPointer {
            tjDecompressHeader3(handle, $0.baseAddress, UInt(jpeg.count), &width, &height, &subsamp, &colorspace)
        }
        return header == 0 ? (Int(width), Int(height)) : nil
    }

    /// The image's luma plane (decoded to 8-bit grey): for tests that look at what a crop kept.
    public static func grey(_ jpeg: [UInt8]) throws(JPEGError) -> (width: Int, height: Int, pixels: [UInt8]) {
        try JPEG.pixels(jpeg, TJPF_GRAY, bytesPerPixel: 1)
    }
}
