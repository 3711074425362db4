/// One plane of an uncompressed frame: where it starts in the frame's bytes, its row
/// pitch, its rows, and the bytes of each row that hold pixels.
public struct FramePlane: Hashable, Sendable {
    public var offset: Int
    public var bytesPerLine: Int
    public var rows: Int
    public var rowBytes: Int

    public init(offset: Int, bytesPerLine: Int, rows: Int, rowBytes: Int) {
        (self.offset, self.bytesPerLine, self.rows, self.rowBytes) = (offset, bytesPerLine, rows, rowBytes)
    }
}

/// The negotiated format of a stream.
public struct StreamFormat: Hashable, Sendable {
    public var width: Int
    public var height: Int
    public var pixelFormat: PixelFormat
    /// Bytes per row of the image (of its first plane for YU12 and NV12; rows may be padded).
    public var bytesPerLine: Int
    /// The nominal frame rate (from `VIDIOC_G_PARM`), when the driver reports one.
    public var framesPerSecond: Double?

    public init(width: Int, height: Int, pixelFormat: PixelFormat, bytesPerLine: Int, framesPerSecond: Double? = nil) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.bytesPerLine = bytesPerLine
        self.framesPerSecond = framesPerSecond
    }
}

extension StreamFormat {
    /// The planes of an uncompressed frame in this format (nil for JPEG and unknown
    /// formats); rows may be padded (`bytesPerLine`), the last row of each plane need not be.
    public var planes: [FramePlane]? {
        guard width > 0, height > 0, let bpp = pixelFormat.lumaBytesPerPixel else { return nil }
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        // A YUYV row holds whole pairs.
        let luma = FramePlane(offset: 0, bytesPerLine: bytesPerLine, rows: height, rowBytes: pixelFormat == .yuyv ? cw * 4 : width * bpp)
        guard bytesPerLine >= luma.rowBytes else { return nil }
        switch pixelFormat {
        case .yuv420:
            let cstride = (bytesPerLine + 1) / 2
            let cb = FramePlane(offset: bytesPerLine * height, bytesPerLine: cstride, rows: ch, rowBytes: cw)
            var cr = cb
            cr.offset += cstride * ch
            return [luma, cb, cr]
        case .nv12:
            return [luma, FramePlane(offset: bytesPerLine * height, bytesPerLine: bytesPerLine, rows: ch, rowBytes: cw * 2)]
        default:
            return [luma]
        }
    }

    /// The fewest bytes a frame in this format can have (nil when ``planes`` is nil).
    public var minimumFrameBytes: Int? {
        planes?.last.map { $0.offset + $0.bytesPerLine * ($0.rows - 1) + $0.rowBytes }
    }
}
