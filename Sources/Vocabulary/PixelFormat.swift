// The formats of camera frames, by their V4L2 fourcc (linux/videodev2.h; V4L2Tests checks the
// constants against the header's): shared by V4L2, libcamera, the ring and the encoders.

/// A V4L2 pixel format (a fourcc such as `MJPG`).
public struct PixelFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// `V4L2_PIX_FMT_MJPEG`
    public static let mjpeg = PixelFormat(fourCC: "MJPG")
    /// `V4L2_PIX_FMT_JPEG`
    public static let jpeg = PixelFormat(fourCC: "JPEG")
    /// `V4L2_PIX_FMT_YUYV` (4:2:2, Y0 U Y1 V)
    public static let yuyv = PixelFormat(fourCC: "YUYV")
    /// `V4L2_PIX_FMT_YUV420` (`YU12`, I420): a Y plane, then a Cb and a Cr plane of half
    /// the width and height (rounded up), each chroma row `bytesPerLine / 2` (rounded up).
    public static let yuv420 = PixelFormat(fourCC: "YU12")
    /// `V4L2_PIX_FMT_NV12`: a Y plane, then one plane of interleaved Cb Cr pairs, half the
    /// height (rounded up), with the Y plane's `bytesPerLine`.
    public static let nv12 = PixelFormat(fourCC: "NV12")
    /// `V4L2_PIX_FMT_RGB24` (`RGB3`): packed, the bytes R G B for each pixel.
    ///
    /// libcamera names formats by their DRM fourcc, whose channel order is that of a
    /// little-endian word, so its names read backwards in memory: libcamera `RGB888`
    /// (DRM_FORMAT_RGB888) is B G R in memory, i.e. ``bgr24``; libcamera `BGR888` is R G B,
    /// i.e. this format (libcamera's `formats.cpp` maps them to V4L2 BGR24 and RGB24).
    public static let rgb24 = PixelFormat(fourCC: "RGB3")
    /// `V4L2_PIX_FMT_BGR24` (`BGR3`): packed, the bytes B G R for each pixel (libcamera `RGB888`).
    public static let bgr24 = PixelFormat(fourCC: "BGR3")

    /// The formats a capture stream takes, in the order it asks for them: compressed
    /// first (the least bus bandwidth and no encoding for a photo), then YUYV, then the
    /// other uncompressed formats (4:2:0 before the larger packed RGB).
    public static let captureOrder: [PixelFormat] = [.mjpeg, .jpeg, .yuyv, .yuv420, .nv12, .rgb24, .bgr24]

    /// The formats a capture stream takes when asked for them by name: ``captureOrder`` and
    /// H.264 (`[camera] pixel-format = "h264"`), which is never chosen by itself: its frames
    /// are not pictures one by one (docs/video.md#the-cameras-own-h264).
    package static let capturable: [PixelFormat] = captureOrder + [.h264]

    /// Frames are already JPEG images.
    public var isJPEG: Bool { self == .mjpeg || self == .jpeg }

    /// Bytes per pixel of the first plane's rows for the uncompressed formats, nil for the others.
    public var lumaBytesPerPixel: Int? {
        switch self {
        case .yuyv: 2
        case .rgb24, .bgr24: 3
        case .yuv420, .nv12: 1
        default: nil
        }
    }

    /// The four characters, e.g. `MJPG`.
    public var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (8 * $0)) }
        return String(decoding: bytes.map { (32...126).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}

extension PixelFormat {
    /// `V4L2_PIX_FMT_H264` (Annex B byte stream, start codes).
    public static let h264 = PixelFormat(fourCC: "H264")

    /// A format from its four characters (`v4l2_fourcc`).
    public init(fourCC: StaticString) {
        precondition(fourCC.utf8CodeUnitCount == 4)
        let b = fourCC.withUTF8Buffer { Array($0) }
        self.init(rawValue: UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24)
    }
}
