import CLibcameraLoader

/// One completed frame, its bytes copied out of libcamera's buffer.
public struct LibcameraFrame: Sendable {
    /// The planes' bytes, one after another (one plane for MJPEG and YUYV).
    public var bytes: [UInt8]
    /// `controls::SensorTimestamp`: ns on CLOCK_MONOTONIC (0 when the camera gave none).
    public var sensorTimestamp: Int64
    public var sequence: UInt32
    /// False for a frame libcamera marked as an error.
    public var isComplete: Bool
}

/// One camera acquired from libcamera with one stream, or two in the same requests: configure, start (frames to a
/// handler on libcamera's thread), set controls on the next request, stop, close.
public final class LibcameraStream: @unchecked Sendable {
    // @unchecked: `camera` is used only through the bridge, whose calls are safe from any
    // thread (the pending controls behind its lock); `handlerBox` is set while stopped only;
    // `close()` is called by the stream's owner once nobody else holds it (the controls
    // detach from it first, LibcameraFrameStream).
    private let camera: OpaquePointer
    private let owner: Libcamera
    private var handlerBox: Unmanaged<HandlerBox>?
    /// The streams as libcamera configured them, in the order asked (empty before ``configure(_:buffers:)``).
    public private(set) var configurations: [evc_lc_stream_config] = []
    /// The first (capture) stream as libcamera configured it.
    public var configuration: evc_lc_stream_config? { configurations.first }

    final class HandlerBox {
        let handler: @Sendable (LibcameraFrame) -> Void
        init(_ handler: @escaping @Sendable (LibcameraFrame) -> Void) { self.handler = handler }
    }

    /// Acquires camera `id`.
    public init(_ libcamera: Libcamera, id: String) throws(LibcameraError) {
        var error = evc_lc_error()
        guard let camera = evc_lc_camera_open(libcamera.manager, id, &error) else { throw LibcameraError(error) }
        self.camera = camera
        self.owner = libcamera
    }

    deinit {
        close()
    }

    private var closed = false

    /// Stops if needed, frees the buffers and releases the camera (another program, or
    /// another stream, may acquire it from now on). Nothing else may be called afterwards.
    public func close() {
        guard !closed else { return }
        closed = true
        evc_lc_camera_close(camera)
        handlerBox?.release()
        handlerBox = nil
    }

    /// Configures one stream (`StreamRole::VideoRecording`): `format` (a fourcc such as
    /// `fourcc("MJPG")`) at a size; buffers are allocated and mapped once here.
    public func configure(format: UInt32, width: Int, height: Int, buffers: Int = 4) throws(LibcameraError) {
        try configure(
            [LibcameraStreamRequest(role: .videoRecording, format: LibcameraFormat(fourcc: format, width: width, height: height))],
            buffers: buffers)
    }

    /// Configures `streams` (one or two: the capture stream, then the live view's) in one
    /// configuration; each request carries a buffer of every stream. ``configurations`` then
    /// holds them as libcamera configured them.
    public func configure(_ streams: [LibcameraStreamRequest], buffers: Int = 4) throws(LibcameraError) {
        guard (1...Int(EVC_LC_MAX_STREAMS)).contains(streams.count), (1...32).contains(buffers),
            streams.allSatisfy({ (1...16384).contains($0.format.width) && (1...16384).contains($0.format.height) })
        else {
            let asked = streams.map { "\($0.format.name) \($0.format.width)x\($0.format.height)" }.joined(separator: " + ")
            throw LibcameraError(code: -22, message: "no such stream: \(asked.isEmpty ? "none" : asked), \(buffers) buffers")
        }
        var error = evc_lc_error()
        var out = [evc_lc_stream_config](repeating: evc_lc_stream_config(), count: streams.count)
        let requests = streams.map(\.c)
        guard evc_lc_camera_configure(camera, requests, requests.count, UInt32(buffers), &out, &error) == 0 else {
            throw LibcameraError(error)
        }
        configurations = out
    }

    /// Starts streaming; `handler` gets every frame on libcamera's thread and must not block.
    public func start(_ handler: @escaping @Sendable (LibcameraFrame) -> Void) throws(LibcameraError) {
        let box = Unmanaged.passRetained(HandlerBox(handler))
        var error = evc_lc_error()
        let rc = evc_lc_camera_start(
            camera,
            { context, frame in
                guard let context, let frame else { return }
                let box = Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue()
                box.handler(LibcameraFrame(frame.pointee))
            }, box.toOpaque(), &error)
        guard rc == 0 else {
            box.release()
            throw LibcameraError(error)
        }
        handlerBox?.release()
        handlerBox = box
    }

    /// Starts streaming with no handler: each frame waits for ``withNextFrame(timeout:_:)``.
    public func startPulling() throws(LibcameraError) {
        var error = evc_lc_error()
        guard evc_lc_camera_start(camera, nil, nil, &error) == 0 else { throw LibcameraError(error) }
    }

    /// After ``startPulling()``: waits at most `timeout` for the next frame and lends it to
    /// `body` in libcamera's own buffer (no copy), then queues its request again. Throws
    /// libcamera's code: -ETIMEDOUT (110) when none came, -ENODEV (19) once the camera is
    /// gone (unplugged), -EPIPE (32) when not streaming.
    public func withNextFrame(timeout: Duration, _ body: (evc_lc_frame) -> Void) throws(LibcameraError) {
        var error = evc_lc_error()
        var frame = evc_lc_frame()
        let milliseconds = Int32(clamping: Int64(max(0, (timeout / .milliseconds(1)).rounded(.up))))
        guard evc_lc_camera_next_frame(camera, milliseconds, &frame, &error) == 0 else { throw LibcameraError(error) }
        body(frame)
        guard evc_lc_camera_requeue(camera, &error) == 0 else { throw LibcameraError(error) }
    }

    /// Stops streaming; no frame is delivered after it returns.
    public func stop() throws(LibcameraError) {
        var error = evc_lc_error()
        guard evc_lc_camera_stop(camera, &error) == 0 else { throw LibcameraError(error) }
    }

    /// Sets an integer (or boolean) control on the next request (`AfMode`, `AfTrigger`).
    public func set(_ id: UInt32, integer value: Int64) throws(LibcameraError) {
        var error = evc_lc_error()
        guard evc_lc_camera_set_int(camera, id, value, &error) == 0 else { throw LibcameraError(error) }
    }

    /// Sets a float control on the next request (`ExposureValue`).
    public func set(_ id: UInt32, float value: Float) throws(LibcameraError) {
        var error = evc_lc_error()
        guard value.isFinite else { throw LibcameraError(code: -22, message: "not a number: \(value)") }
        guard evc_lc_camera_set_float(camera, id, value, &error) == 0 else { throw LibcameraError(error) }
    }

    /// Sets a rectangle control on the next request (`ScalerCrop`).
    public func set(_ id: UInt32, rectangle value: SensorRect) throws(LibcameraError) {
        var error = evc_lc_error()
        guard evc_lc_camera_set_rect(camera, id, value.c, &error) == 0 else { throw LibcameraError(error) }
    }
}

extension LibcameraFrame {
    init(_ frame: evc_lc_frame) {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: frame.planes) { planes in
            withUnsafeBytes(of: frame.plane_bytes) { sizes in
                let pointers = planes.bindMemory(to: UnsafePointer<UInt8>?.self)
                let lengths = sizes.bindMemory(to: Int.self)
                let count = min(Int(frame.plane_count), 3)
                bytes.reserveCapacity((0..<count).reduce(0) { $0 + lengths[$1] })
                for i in 0..<count {
                    guard let p = pointers[i] else { continue }
                    bytes.append(contentsOf: UnsafeBufferPointer(start: p, count: lengths[i]))
                }
            }
        }
        self.init(bytes: bytes, sensorTimestamp: frame.sensor_timestamp_ns, sequence: frame.sequence, isComplete: frame.status == 0)
    }
}
