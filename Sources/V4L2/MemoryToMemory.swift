#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Vocabulary

extension DeviceCapabilities {
    /// `V4L2_CAP_VIDEO_M2M` or `V4L2_CAP_VIDEO_M2M_MPLANE`: a codec or converter that takes
    /// frames on one queue and gives results back on the other (a hardware encoder).
    var isMemoryToMemory: Bool {
        deviceCaps & (UInt32(V4L2_CAP_VIDEO_M2M) | UInt32(V4L2_CAP_VIDEO_M2M_MPLANE)) != 0
    }
}

extension V4L2Device {
    /// The formats of the queue the driver fills (`VIDIOC_ENUM_FMT` on the capture queue,
    /// multi-planar or not): for a memory-to-memory encoder, what it encodes to.
    func capturePixelFormats() -> [PixelFormat] {
        var formats: [PixelFormat] = []
        for type in [V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE, V4L2_BUF_TYPE_VIDEO_CAPTURE] {
            for index: UInt32 in 0..<64 {
                var desc = v4l2_fmtdesc()
                desc.index = index
                desc.type = type.rawValue
                guard evc_ioctl(fd, EVC_VIDIOC_ENUM_FMT, &desc) == 0 else { break }
                formats.append(PixelFormat(rawValue: desc.pixelformat))
            }
        }
        return formats
    }
}

/// The first memory-to-memory device among `nodes` (`/dev/videoN`) that encodes to H.264
/// (the Raspberry Pi 4's `bcm2835-codec-encode` at /dev/video11, a Rockchip or Amlogic
/// encoder), or nil: what FFmpeg's `h264_v4l2m2m` encoder would open.
public func h264EncoderNode(among nodes: [String]) -> String? {
    for path in nodes {
        guard let device = try? V4L2Device(path: path), device.capabilities.isMemoryToMemory else { continue }
        if device.capturePixelFormats().contains(.h264) { return path }
    }
    return nil
}
