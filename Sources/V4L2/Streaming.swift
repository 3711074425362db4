// Frame capture over V4L2 memory-mapped streaming: format negotiation, buffers, a frame with
// a timeout, and a teardown that always runs. Self-contained on its own file descriptor so a
// photo or a recording never shares state with the control session.
#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import LinuxIO
import Vocabulary

/// What a frame's timestamp means (`V4L2_BUF_FLAG_TIMESTAMP_*` and `V4L2_BUF_FLAG_TSTAMP_SRC_*`).
public struct FrameTimestampKind: Hashable, Sendable, CustomStringConvertible {
    /// CLOCK_MONOTONIC, the clock of evdev events (`V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC`).
    public var isMonotonic: Bool
    /// Taken at the start of exposure (`V4L2_BUF_FLAG_TSTAMP_SRC_SOE`); otherwise at the end
    /// of the frame (`…_EOF`), when the last byte arrived.
    public var isStartOfExposure: Bool

    public init(flags: UInt32) {
        isMonotonic = flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        isStartOfExposure = flags & UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_MASK) == UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_SOE)
    }

    public init(isMonotonic: Bool, isStartOfExposure: Bool) {
        self.isMonotonic = isMonotonic
        self.isStartOfExposure = isStartOfExposure
    }

    public var description: String {
        (isMonotonic ? "monotonic" : "not monotonic") + ", " + (isStartOfExposure ? "start of exposure" : "end of frame")
    }
}

/// A frame in the driver's buffer, valid only inside ``VideoCaptureStream/withNextFrame(timeout:_:)``.
public struct BorrowedFrame {
    public var bytes: UnsafeRawBufferPointer
    public var sequence: UInt32
    /// The driver's timestamp, in microseconds (see `timestampKind`).
    public var timestampMicroseconds: Int64
    public var timestampKind: FrameTimestampKind

    public init(bytes: UnsafeRawBufferPointer, sequence: UInt32, timestampMicroseconds: Int64, timestampKind: FrameTimestampKind) {
        self.bytes = bytes
        self.sequence = sequence
        self.timestampMicroseconds = timestampMicroseconds
        self.timestampKind = timestampKind
    }
}

/// A memory-mapped V4L2 capture stream on its own file descriptor.
///
/// Not thread-safe: one thread opens it, pulls frames and lets it go. Buffers are unmapped,
/// streaming is stopped and the descriptor closed in `deinit`, whatever failed before, so a
/// camera is never left streaming. Every wait is bounded by a timeout.
public final class VideoCaptureStream {
    /// The device node.
    public let path: String
    /// What the driver agreed to.
    public let format: StreamFormat

    private var fd: Int32
    private var buffers: [(pointer: UnsafeMutableRawPointer, length: Int)] = []
    private var streaming = false

    /// Opens `path`, picks the first of `pixelFormats` the camera offers (by default
    /// MJPEG, else JPEG, else YUYV, else the other uncompressed formats of
    /// ``PixelFormat/captureOrder``), asks for `width`×`height` and `framesPerSecond` when
    /// given (the driver may choose the nearest; ``format`` says what it chose), maps
    /// `bufferCount` buffers and queues them.
    public init(
        path: String, width: Int? = nil, height: Int? = nil, framesPerSecond: Double? = nil, bufferCount: Int = 4,
        pixelFormats: [PixelFormat] = PixelFormat.captureOrder
    ) throws(StreamingError) {
        self.path = path
        let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw StreamingError.fromErrno(errno, "opening \(path)") }
        let negotiated: StreamFormat
        do {
            negotiated = try Self.negotiate(
                fd: fd, path: path, width: width, height: height, framesPerSecond: framesPerSecond, pixelFormats: pixelFormats)
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.fd = fd
        self.format = negotiated
        // Fully initialised from here: releaseAll is idempotent, so whether deinit also runs
        // after a throw does not matter.
        do {
            try mapBuffers(count: bufferCount)
        } catch {
            releaseAll()
            throw error
        }
    }

    deinit {
        releaseAll()
    }

    /// Starts streaming (`VIDIOC_STREAMON`).
    public func start() throws(StreamingError) {
        guard !streaming else { return }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        try ioctlRetrying(EVC_VIDIOC_STREAMON, &type, "VIDIOC_STREAMON")
        streaming = true
    }

    /// Stops streaming (`VIDIOC_STREAMOFF`); buffers return to the driver's queue afterwards.
    public func stop() {
        guard streaming else { return }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        _ = evc_ioctl(fd, EVC_VIDIOC_STREAMOFF, &type)
        streaming = false
    }

    /// Waits at most `timeout` for the next frame, copies it out and gives the buffer back.
    public func nextFrame(timeout: Duration) throws(StreamingError) -> VideoFrame {
        var frame: VideoFrame?
        try withNextFrame(timeout: timeout) { b in
            frame = VideoFrame(
                bytes: [UInt8](b.bytes), format: format, sequence: b.sequence, timestampMicroseconds: b.timestampMicroseconds)
        }
        return frame!
    }

    /// Waits at most `timeout` for the next frame and lends it to `body` in the driver's own
    /// buffer (no copy, no allocation), then gives the buffer back to the driver.
    public func withNextFrame(timeout: Duration, _ body: (BorrowedFrame) -> Void) throws(StreamingError) {
        if !streaming { try start() }
        let deadline = ContinuousClock.now + timeout
        while true {
            var buf = v4l2_buffer()
            buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buf.memory = V4L2_MEMORY_MMAP.rawValue
            let dequeued: Bool
            do {
                dequeued = try retryingEINTR { evc_ioctl(fd, EVC_VIDIOC_DQBUF, &buf) } == 0
            } catch  where error.errno == EAGAIN {
                dequeued = false
            } catch {
                throw StreamingError.fromErrno(error.errno, "VIDIOC_DQBUF on \(path)")
            }
            if dequeued {
                let index = Int(buf.index)
                guard index < buffers.count else {
                    throw StreamingError(code: .failed, context: "VIDIOC_DQBUF on \(path): buffer index \(index) out of range")
                }
                let used = min(Int(buf.bytesused), buffers[index].length)
                let error = buf.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0
                // A frame the driver marks as corrupted (or an empty one) is skipped, not delivered.
                if !error && used > 0 {
                    let usec = Int64(buf.timestamp.tv_sec) * 1_000_000 + Int64(buf.timestamp.tv_usec)
                    body(
                        BorrowedFrame(
                            bytes: UnsafeRawBufferPointer(start: buffers[index].pointer, count: used), sequence: buf.sequence,
                            timestampMicroseconds: usec, timestampKind: FrameTimestampKind(flags: buf.flags)))
                }
                var again = buf
                try ioctlRetrying(EVC_VIDIOC_QBUF, &again, "VIDIOC_QBUF")
                if error || used == 0 { continue }
                return
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                throw StreamingError(code: .timedOut, context: "waiting for a frame from \(path) (\(timeout))")
            }
            let (s, atto) = remaining.components
            let ms = Int32(clamping: s * 1000 + atto / 1_000_000_000_000_000 + 1)
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let n: Int32
            do { n = try retryingEINTR { poll(&pfd, 1, ms) } } catch { throw StreamingError.fromErrno(error.errno, "poll on \(path)") }
            if n > 0 && pfd.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 && pfd.revents & Int16(POLLIN) == 0 {
                // uvcvideo reports an unplugged camera as POLLERR; DQBUF then says ENODEV.
                var probe = v4l2_capability()
                if evc_ioctl(fd, EVC_VIDIOC_QUERYCAP, &probe) != 0 {
                    throw StreamingError.fromErrno(errno, "waiting for a frame from \(path)")
                }
                throw StreamingError(code: .failed, errno: EIO, context: "waiting for a frame from \(path) (poll error)")
            }
        }
    }

    // MARK: - Set-up and teardown

    private static func negotiate(
        fd: Int32, path: String, width: Int?, height: Int?, framesPerSecond: Double?, pixelFormats: [PixelFormat]
    ) throws(StreamingError) -> StreamFormat {
        var cap = v4l2_capability()
        if evc_ioctl(fd, EVC_VIDIOC_QUERYCAP, &cap) != 0 {
            let e = errno
            if e == ENOTTY {
                throw StreamingError(code: .notACaptureDevice, errno: e, context: "VIDIOC_QUERYCAP on \(path)")
            }
            throw StreamingError.fromErrno(e, "VIDIOC_QUERYCAP on \(path)")
        }
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        guard caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0, caps & UInt32(V4L2_CAP_STREAMING) != 0 else {
            throw StreamingError(code: .notACaptureDevice, context: "\(path) has no streaming video capture")
        }

        // Which formats are offered.
        var offered: [PixelFormat] = []
        for index in 0..<UInt32(64) {
            var desc = v4l2_fmtdesc()
            desc.index = index
            desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard evc_ioctl(fd, EVC_VIDIOC_ENUM_FMT, &desc) == 0 else { break }
            offered.append(PixelFormat(rawValue: desc.pixelformat))
        }
        let accepted = pixelFormats.filter(PixelFormat.capturable.contains)
        guard let chosen = accepted.first(where: offered.contains) else {
            let list = offered.map(\.description).joined(separator: ", ")
            let wanted = accepted.map(\.description).joined(separator: ", ")
            throw StreamingError(code: .noUsableFormat, context: "\(path) offers only [\(list)]; one of [\(wanted)] needed")
        }

        var fmt = v4l2_format()
        fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        if evc_ioctl(fd, EVC_VIDIOC_G_FMT, &fmt) != 0 { throw StreamingError.fromErrno(errno, "VIDIOC_G_FMT on \(path)") }
        if let width { fmt.fmt.pix.width = UInt32(clamping: width) }
        if let height { fmt.fmt.pix.height = UInt32(clamping: height) }
        fmt.fmt.pix.pixelformat = chosen.rawValue
        fmt.fmt.pix.field = V4L2_FIELD_ANY.rawValue
        fmt.fmt.pix.bytesperline = 0
        if evc_ioctl(fd, EVC_VIDIOC_S_FMT, &fmt) != 0 { throw StreamingError.fromErrno(errno, "VIDIOC_S_FMT \(chosen) on \(path)") }
        if evc_ioctl(fd, EVC_VIDIOC_G_FMT, &fmt) != 0 { throw StreamingError.fromErrno(errno, "VIDIOC_G_FMT on \(path)") }
        let pix = fmt.fmt.pix
        let got = PixelFormat(rawValue: pix.pixelformat)
        guard accepted.contains(got) else {
            throw StreamingError(code: .noUsableFormat, context: "\(path) switched to \(got) instead of \(chosen)")
        }

        // After the size: the rates a driver offers depend on it.
        let fps = try frameRate(fd: fd, path: path, asking: framesPerSecond)
        let stride = got.lumaBytesPerPixel.map { max(Int(pix.bytesperline), Int(pix.width) * $0) } ?? Int(pix.bytesperline)
        return StreamFormat(
            width: Int(pix.width), height: Int(pix.height), pixelFormat: got, bytesPerLine: stride, framesPerSecond: fps)
    }

    private func mapBuffers(count: Int) throws(StreamingError) {
        var req = v4l2_requestbuffers()
        req.count = UInt32(max(2, count))
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctlRetrying(EVC_VIDIOC_REQBUFS, &req, "VIDIOC_REQBUFS")
        guard req.count > 0 else {
            throw StreamingError(code: .failed, errno: ENOMEM, context: "VIDIOC_REQBUFS on \(path): no buffers granted")
        }
        for index in 0..<req.count {
            var buf = v4l2_buffer()
            buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buf.memory = V4L2_MEMORY_MMAP.rawValue
            buf.index = index
            try ioctlRetrying(EVC_VIDIOC_QUERYBUF, &buf, "VIDIOC_QUERYBUF")
            let length = Int(buf.length)
            let p = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(buf.m.offset))
            guard let p, p != UnsafeMutableRawPointer(bitPattern: -1) else {
                throw StreamingError.fromErrno(errno, "mmap of buffer \(index) of \(path)")
            }
            buffers.append((p, length))
            try ioctlRetrying(EVC_VIDIOC_QBUF, &buf, "VIDIOC_QBUF")
        }
    }

    /// Stops streaming, frees the driver's buffers and closes the device now (as `deinit`
    /// would later): the camera is free for another program when this returns. Nothing
    /// else may be called afterwards.
    public func close() {
        releaseAll()
    }

    private func releaseAll() {
        guard fd >= 0 else { return }
        stop()
        for b in buffers { munmap(b.pointer, b.length) }
        if !buffers.isEmpty {
            // Free the driver's buffers so the next opener can negotiate a new format.
            var req = v4l2_requestbuffers()
            req.count = 0
            req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            req.memory = V4L2_MEMORY_MMAP.rawValue
            _ = evc_ioctl(fd, EVC_VIDIOC_REQBUFS, &req)
            buffers.removeAll()
        }
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    private func ioctlRetrying<T>(_ request: UInt, _ arg: inout T, _ name: String) throws(StreamingError) {
        do { _ = try retryingEINTR { evc_ioctl(fd, request, &arg) } } catch {
            throw StreamingError.fromErrno(error.errno, "\(name) on \(path)")
        }
    }
}
