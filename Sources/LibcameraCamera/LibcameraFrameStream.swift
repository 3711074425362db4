import CLibcameraLoader
import V4L2
import Vocabulary
import Frames

/// A libcamera camera as the capture stream's ``FrameStream``: one capture stream configured once
/// (MJPEG, else YUYV, else 24-bit RGB: formats the ring's readers take, docs/video.md#camera-formats),
/// its buffers and requests allocated once by the bridge and recycled; each frame lent to the
/// ring in libcamera's own buffer, its time the `SensorTimestamp` (CLOCK_MONOTONIC, the clock
/// of evdev events).
public final class LibcameraFrameStream: FrameStream {
    public let format: StreamFormat
    /// The stream, for the controls set on its next requests (``LibcameraControls``).
    public let stream: LibcameraStream
    private let id: String
    private let controls: LibcameraLiveControls?
    /// The live view's stream, when the camera gives one beside the capture stream.
    private let viewfinder: ViewfinderFrames?
    /// Where the live view's frames come from while this stream runs.
    public let liveView: LiveViewStream

    /// Acquires camera `id`, configures and starts it at `width`×`height` when given (else
    /// the largest size up to 1920×1080 the camera offers in the chosen format). `controls`
    /// put their values on this stream's requests while it runs. With `liveViewWidth` (the
    /// live view's `preview-width`) and `viewfinder`, a second stream that wide is asked for
    /// the live view (``LibcameraStreamPlan``); its frames go to `viewfinder`.
    public init(
        _ libcamera: Libcamera, id: String, width: Int?, height: Int?, controls: LibcameraLiveControls? = nil,
        liveViewWidth: Int? = nil, viewfinder: ViewfinderFrames? = nil
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
        let plan = LibcameraStreamPlan(main: chosen, liveViewWidth: viewfinder == nil ? nil : liveViewWidth)
        var liveView = libcamera.liveViewStream(of: id, plan: plan)
        do {
            if case .own(let second) = liveView {
                do {
                    try stream.configure([plan.main, LibcameraStreamRequest(role: .viewfinder, format: second)])
                } catch {
                    // Validated but not configured (buffers for two streams, say): one stream.
                    liveView = .fromMainStream(reason: "configuring two streams: \(error.message)")
                    try stream.configure([plan.main])
                }
            } else {
                try stream.configure([plan.main])
            }
            controls?.attach(stream)
            try stream.startPulling()
        } catch {
            controls?.detach(stream)
            throw Self.streamingError(error, "starting libcamera camera \(id) (\(chosen.name) \(chosen.width)×\(chosen.height))")
        }
        let configured = stream.configurations.map { c in
            StreamFormat(
                width: Int(c.width), height: Int(c.height), pixelFormat: Self.pixelFormat(ofLibcamera: c.fourcc),
                bytesPerLine: Int(c.stride))
        }
        format = configured[0]
        self.liveView = liveView
        self.viewfinder = configured.count > 1 ? viewfinder : nil
        self.viewfinder?.begin(configured[1])
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
                    controls?.noteExposureTime(frame.exposure_time_us)
                    let raw = UnsafeRawBufferPointer(start: bytes, count: frame.plane_bytes.0)
                    body(BorrowedFrame(bytes: raw, sequence: frame.sequence, timestampMicroseconds: ns / 1000, timestampKind: kind))
                    delivered = true
                    if let viewfinder, let second = frame.second?.pointee, second.status == 0 {
                        Self.store(second, in: viewfinder, time: Timestamp(microseconds: ns / 1000), kind: kind)
                    }
                }
            } catch {
                throw Self.streamingError(error, "libcamera camera \(id)")
            }
            // A frame libcamera marked as failed went back to the camera; wait for the next.
            if delivered { return }
        }
    }

    /// The live view's frame of a request (its time the capture stream's frame's: the same
    /// `SensorTimestamp`), its planes laid out as ``StreamFormat/planes`` says.
    static func store(_ frame: evc_lc_frame, in viewfinder: ViewfinderFrames, time: Timestamp, kind: FrameTimestampKind) {
        guard let format = viewfinder.format, let layout = format.planes, let count = format.minimumFrameBytes else { return }
        let planes = withUnsafeBytes(of: frame.planes) { Array($0.bindMemory(to: UnsafePointer<UInt8>?.self)) }
        let sizes = withUnsafeBytes(of: frame.plane_bytes) { Array($0.bindMemory(to: Int.self)) }
        let n = min(Int(frame.plane_count), 3)
        let total = n == 1 || format.pixelFormat.isJPEG ? sizes[0] : count
        viewfinder.store(count: total, sequence: frame.sequence, time: time, kind: kind) { slot in
            // One plane holds the whole frame (MJPEG, YUYV, or planes one after another);
            // else each plane goes where the layout puts it.
            for i in 0..<n {
                guard let p = planes[i] else { continue }
                let offset = n == 1 ? 0 : (i < layout.count ? layout[i].offset : slot.count)
                let bytes = min(sizes[i], slot.count - min(offset, slot.count))
                if bytes > 0 { (slot.baseAddress! + offset).copyMemory(from: p, byteCount: bytes) }
            }
        }
    }

    /// Stops and releases the camera: whoever reads "capture stream stopped" may acquire it.
    public func close() {
        viewfinder?.begin(nil)
        controls?.detach(stream)
        stream.close()
    }

    /// The V4L2 pixel format of a libcamera (DRM) fourcc. DRM names packed RGB by the order of a
    /// little-endian word: libcamera's `RGB888` ("RG24") is B, G, R in memory, V4L2's `BGR3`;
    /// its `BGR888` ("BG24") is R, G, B, V4L2's `RGB3`. MJPEG and YUYV are the same codes.
    static func pixelFormat(ofLibcamera code: UInt32) -> PixelFormat {
        switch code {
        case fourcc("RG24"): .bgr24
        case fourcc("BG24"): .rgb24
        default: PixelFormat(rawValue: code)
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
    /// names it in messages), at the settings' size; the live view's from a second stream
    /// into `viewfinder` when the camera gives one (`liveViewWidth` wide).
    public static func libcamera(
        _ libcamera: Libcamera, id: String, controls: LibcameraLiveControls? = nil, liveViewWidth: Int? = nil,
        viewfinder: ViewfinderFrames? = nil
    ) -> FrameStreamOpener {
        FrameStreamOpener { settings throws(StreamingError) in
            try LibcameraFrameStream(
                libcamera, id: id, width: settings.width, height: settings.height, controls: controls, liveViewWidth: liveViewWidth,
                viewfinder: viewfinder)
        }
    }
}
