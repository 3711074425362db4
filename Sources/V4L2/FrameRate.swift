#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims

extension VideoCaptureStream {
    /// Asks the driver for `framesPerSecond` when given (`VIDIOC_S_PARM`, time per frame
    /// 1 / fps) and returns the rate it will stream at (`VIDIOC_G_PARM`). Drivers pick the
    /// nearest interval they offer for the size (vivid, uvcvideo); one that cannot set a rate
    /// (no `V4L2_CAP_TIMEPERFRAME`) keeps its own. Nil when the driver does not say.
    static func frameRate(fd: Int32, path: String, asking framesPerSecond: Double?) throws(StreamingError) -> Double? {
        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        guard evc_ioctl(fd, EVC_VIDIOC_G_PARM, &parm) == 0 else { return nil }
        if let fps = framesPerSecond, parm.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0 {
            let (numerator, denominator) = timePerFrame(fps)
            parm.parm.capture.timeperframe = v4l2_fract(numerator: numerator, denominator: denominator)
            if evc_ioctl(fd, EVC_VIDIOC_S_PARM, &parm) != 0 {
                throw StreamingError.fromErrno(errno, "VIDIOC_S_PARM \(fps) fps on \(path)")
            }
            // S_PARM writes the chosen interval back; G_PARM again for drivers that do not.
            _ = evc_ioctl(fd, EVC_VIDIOC_G_PARM, &parm)
        }
        let t = parm.parm.capture.timeperframe
        return t.numerator > 0 && t.denominator > 0 ? Double(t.denominator) / Double(t.numerator) : nil
    }

    /// 1 / `fps` as a reduced fraction in thousandths: 25 → 1/25, 29.97 → 100/2997, 7.5 → 2/15.
    static func timePerFrame(_ fps: Double) -> (numerator: UInt32, denominator: UInt32) {
        var n: UInt32 = 1000
        var d = UInt32((fps * 1000).rounded())
        var a = n, b = d
        while b != 0 { (a, b) = (b, a % b) }
        if a > 1 {
            n /= a
            d /= a
        }
        return (n, d)
    }
}
