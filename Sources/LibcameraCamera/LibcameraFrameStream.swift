import Actions
import CLibcameraLoader
import V4L2

/// A libcamera camera as the capture stream's ``FrameStream``: one stream configured once
/// (MJPEG, else YUYV: the formats the ring's readers take; else 24-bit RGB, converted to
/// YUYV), its buffers and requests allocated once by the bridge and recycled; each frame
/// lent to the ring in libcamera's own buffer (an RGB frame in one conversion buffer
/// allocated once), its time the `SensorTimestamp` (CLOCK_MONOTONIC, the clock of evdev events).
public final class LibcameraFrameStream: FrameStream {
    public let format: StreamFormat
    /// The stream, for the controls set on its next requests (``LibcameraControls``).
    public let stream: LibcameraStream
    private let id: String
    private let controls: LibcameraLiveControls?
    /// For an RGB stream: its layout, and the YUYV frame it is converted into.
    private let rgb: (order: RGBOrder, stride: Int)?
    private var converted: [UInt8] = []

    /// Acquires camera `id`, configures and starts it at `width`×`height` when given (else
    /// the largest size up to 1920×1080 the camera offers in the chosen format). `controls`
    /// put their values on this stream's requests while it runs.
    public init(
        _ libcamera: Libcamera, id: String, width: Int?, height: Int?, controls: LibcameraLiveControls? = nil
    ) throws(StreamingError) {
        self.id = id
        self.controls = controls
        let formats: [LibcameraFormat]
        do {
            formats = try libcamera.formats(of: id)
            stream = try LibcameraStream(libcamera, id: id)
        } catch {
            throw Self.streamingError(error, "opening libcamera camera \(id)")
        }
        guard let chosen = Self.choose(formats, width: width, height: height) else {
            let offered = formats.map(\.name)
            throw StreamingError(
                code: .noUsableFormat,
                context:
                    "libcamera camera \(id) offers neither MJPEG, YUYV nor 24-bit RGB (it offers \(Set(offered).sorted().joined(separator: ", ")))"
            )
        }
        do {
            try stream.configure(format: chosen.fourcc, width: chosen.width, height: chosen.height)
            controls?.attach(stream)
            try stream.startPulling()
        } catch {
            controls?.detach(stream)
            throw Self.streamingError(error, "starting libcamera camera \(id) (\(chosen.name) \(chosen.width)×\(chosen.height))")
        }
        let done = stream.configuration!
        if let order = RGBOrder(fourcc: done.fourcc) {
            // YUYV pairs pixels: an odd last column is left out.
            let width = Int(done.width) & ~1
            rgb = (order, Int(done.stride))
            converted = [UInt8](repeating: 0, count: width * 2 * Int(done.height))
            format = StreamFormat(width: width, height: Int(done.height), pixelFormat: .yuyv, bytesPerLine: width * 2)
        } else {
            rgb = nil
            format = StreamFormat(
                width: Int(done.width), height: Int(done.height), pixelFormat: PixelFormat(rawValue: done.fourcc),
                bytesPerLine: Int(done.stride))
        }
    }

    /// MJPEG, else YUYV, else 24-bit RGB; the asked size when offered, else the largest up to
    /// 1920×1080 (the smallest when none is that small).
    static func choose(_ formats: [LibcameraFormat], width: Int?, height: Int?) -> LibcameraFormat? {
        for code in [fourcc("MJPG"), fourcc("YUYV"), fourcc("RG24"), fourcc("BG24")] {
            let sizes = formats.filter { $0.fourcc == code }
            guard !sizes.isEmpty else { continue }
            if let width, let height, let exact = sizes.first(where: { $0.width == width && $0.height == height }) { return exact }
            if let width, let height {
                // Not offered as such: libcamera adjusts a size it can scale to.
                return LibcameraFormat(fourcc: code, width: width, height: height)
            }
            let area = { (f: LibcameraFormat) in f.width * f.height }
            let fitting = sizes.filter { $0.width <= 1920 && $0.height <= 1080 }
            return fitting.max { area($0) < area($1) } ?? sizes.min { area($0) < area($1) }
        }
        return nil
    }

    public func withNextFrame(timeout: Duration, _ body: (BorrowedFrame) -> Void) throws(StreamingError) {
        let deadline = ContinuousClock.now + timeout
        while true {
            var delivered = false
            do {
                try stream.withNextFrame(timeout: max(.zero, deadline - ContinuousClock.now)) { frame in
                    guard frame.status == 0, frame.plane_count > 0, let bytes = frame.planes.0 else { return }
                    // SensorTimestamp is the start of the exposure on CLOCK_MONOTONIC; a
                    // pipeline without it gives the buffer's time (also CLOCK_MONOTONIC).
                    let ns = frame.sensor_timestamp_ns > 0 ? frame.sensor_timestamp_ns : Int64(bitPattern: frame.buffer_timestamp_ns)
                    let kind = FrameTimestampKind(isMonotonic: true, isStartOfExposure: frame.sensor_timestamp_ns > 0)
                    let raw = UnsafeRawBufferPointer(start: bytes, count: frame.plane_bytes.0)
                    if let rgb {
                        guard raw.count >= rgb.stride * (format.height - 1) + format.width * 3 else { return }
                        converted.withUnsafeMutableBytes { out in
                            Self.yuyv(
                                fromRGB: raw, order: rgb.order, stride: rgb.stride, width: format.width, height: format.height, into: out)
                        }
                        converted.withUnsafeBytes { out in
                            body(BorrowedFrame(bytes: out, sequence: frame.sequence, timestampMicroseconds: ns / 1000, timestampKind: kind))
                        }
                    } else {
                        body(BorrowedFrame(bytes: raw, sequence: frame.sequence, timestampMicroseconds: ns / 1000, timestampKind: kind))
                    }
                    delivered = true
                }
            } catch {
                throw Self.streamingError(error, "libcamera camera \(id)")
            }
            // A frame libcamera marked as failed went back to the camera; wait for the next.
            if delivered { return }
        }
    }

    /// Stops and releases the camera: whoever reads "capture stream stopped" may acquire it.
    public func close() {
        controls?.detach(stream)
        stream.close()
    }

    /// The byte order of libcamera's 24-bit RGB formats (DRM fourccs, little-endian words).
    enum RGBOrder {
        /// `RGB888` ("RG24"): B, G, R in memory.
        case bgrBytes
        /// `BGR888` ("BG24"): R, G, B in memory.
        case rgbBytes

        init?(fourcc code: UInt32) {
            switch code {
            case fourcc("RG24"): self = .bgrBytes
            case fourcc("BG24"): self = .rgbBytes
            default: return nil
            }
        }
    }

    /// 24-bit RGB rows (`stride` bytes apart) as packed YUYV (BT.601, full range, as JPEG's):
    /// each pair of pixels shares the average of their chroma. `width` is even.
    static func yuyv(
        fromRGB rgb: UnsafeRawBufferPointer, order: RGBOrder, stride: Int, width: Int, height: Int,
        into out: UnsafeMutableRawBufferPointer
    ) {
        let (r, b) = order == .rgbBytes ? (0, 2) : (2, 0)
        for y in 0..<height {
            let row = y * stride, to = y * width * 2
            for x in Swift.stride(from: 0, to: width, by: 2) {
                let p = row + x * 3
                let (r0, g0, b0) = (Int(rgb[p + r]), Int(rgb[p + 1]), Int(rgb[p + b]))
                let (r1, g1, b1) = (Int(rgb[p + 3 + r]), Int(rgb[p + 4]), Int(rgb[p + 3 + b]))
                let (rs, gs, bs) = (r0 + r1, g0 + g1, b0 + b1)
                out[to + x * 2] = UInt8((77 * r0 + 150 * g0 + 29 * b0 + 128) >> 8)
                out[to + x * 2 + 1] = UInt8(clamping: ((-43 * rs - 85 * gs + 128 * bs + 256) >> 9) + 128)
                out[to + x * 2 + 2] = UInt8((77 * r1 + 150 * g1 + 29 * b1 + 128) >> 8)
                out[to + x * 2 + 3] = UInt8(clamping: ((128 * rs - 107 * gs - 21 * bs + 256) >> 9) + 128)
            }
        }
    }

    /// libcamera's negative errnos as the capture stream's errors, through the one classifier
    /// (`SystemError.Code(errno:)`): ETIMEDOUT, ENODEV, EBUSY, EACCES are acted on by name. The
    /// bridge's own failures are -1, which is not EPERM here.
    static func streamingError(_ error: LibcameraError, _ context: String) -> StreamingError {
        let message = "\(context): \(error.message)"
        guard error.code < -1 else { return StreamingError(code: .failed, context: message) }
        return StreamingError(errno: -error.code, context: message)
    }
}

extension FrameStreamOpener {
    /// The capture stream's frames from libcamera camera `id` (`CaptureSettings.devicePath`
    /// names it in messages), at the settings' size.
    public static func libcamera(_ libcamera: Libcamera, id: String, controls: LibcameraLiveControls? = nil) -> FrameStreamOpener {
        FrameStreamOpener { settings throws(StreamingError) in
            try LibcameraFrameStream(libcamera, id: id, width: settings.width, height: settings.height, controls: controls)
        }
    }
}
