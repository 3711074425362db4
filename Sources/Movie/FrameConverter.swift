#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import Vocabulary

/// The centre of a frame a digital zoom keeps: even offsets and sizes (4:2:0 chroma).
public struct CropRect: Sendable, Hashable {
    public var x, y, width, height: Int

    /// The centre 1/`zoom` of each side of a `width`×`height` frame (all of it for zoom ≤ 1).
    public init(width: Int, height: Int, zoom: Double) {
        let z = zoom.isFinite && zoom > 1 ? zoom : 1
        let w = max(2, Int(Double(width) / z) & ~1)
        let h = max(2, Int(Double(height) / z) & ~1)
        self.init(x: ((width - w) / 2) & ~1, y: ((height - h) / 2) & ~1, width: w, height: h)
    }

    public init(x: Int, y: Int, width: Int, height: Int) {
        (self.x, self.y, self.width, self.height) = (x, y, width, height)
    }
}

/// Camera frames (YUYV, YU12, NV12, RGB3, BGR3, or MJPEG decoded by libavcodec) as YUV
/// 4:2:0 pictures for the encoder, cropped to ``crop``, through libswscale. One instance
/// belongs to one thread.
final class FrameConverter {
    let format: StreamFormat
    let crop: CropRect
    /// The picture handed to the encoder (its buffer is reallocated when the encoder still
    /// holds the previous one).
    let picture: UnsafeMutablePointer<AVFrame>
    private var scaler: OpaquePointer?
    private var scalerInput = AV_PIX_FMT_NONE
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var decoded: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?

    init(format: StreamFormat, crop: CropRect) throws(MovieError) {
        guard format.pixelFormat.isJPEG || (Self.rawInput(format.pixelFormat) != nil && format.planes != nil) else {
            throw MovieError(
                code: .unsupportedFormat,
                context: "cannot encode camera frames in \(format.pixelFormat) (\(format.width)×\(format.height), "
                    + "\(format.bytesPerLine) bytes per line) to H.264")
        }
        guard crop.x >= 0, crop.y >= 0, crop.x + crop.width <= format.width, crop.y + crop.height <= format.height else {
            throw MovieError(code: .unsupportedFormat, context: "crop \(crop) outside the \(format.width)×\(format.height) frame")
        }
        try FFmpegLibraries.load()
        self.format = format
        self.crop = crop
        guard let picture = av_frame_alloc() else { throw MovieError(code: .codec, errno: ENOMEM, context: "allocating a frame") }
        self.picture = picture
        picture.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        picture.pointee.width = Int32(crop.width)
        picture.pointee.height = Int32(crop.height)
        let rc = av_frame_get_buffer(picture, 0)
        guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "allocating a \(crop.width)×\(crop.height) picture") }
        if format.pixelFormat.isJPEG {
            guard let codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG), let ctx = avcodec_alloc_context3(codec) else {
                throw MovieError(code: .codec, context: "FFmpeg has no MJPEG decoder")
            }
            decoder = ctx
            let open = avcodec_open2(ctx, codec, nil)
            guard open >= 0 else { throw MovieError(code: .codec, averror: open, "opening the MJPEG decoder") }
            decoded = av_frame_alloc()
            packet = av_packet_alloc()
        }
    }

    deinit {
        var p: UnsafeMutablePointer<AVFrame>? = picture
        av_frame_free(&p)
        av_frame_free(&decoded)
        av_packet_free(&packet)
        avcodec_free_context(&decoder)
        sws_freeContext(scaler)
    }

    /// Converts one camera frame into ``picture``.
    func convert(_ bytes: [UInt8]) throws(MovieError) {
        let rc = av_frame_make_writable(picture)
        guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "making the picture writable") }
        if let decoder, let decoded, let packet {
            try decode(bytes, decoder, decoded, packet)
            let fmt = AVPixelFormat(rawValue: decoded.pointee.format)
            guard Int(decoded.pointee.width) >= crop.x + crop.width, Int(decoded.pointee.height) >= crop.y + crop.height,
                let desc = av_pix_fmt_desc_get(fmt)
            else {
                throw MovieError(
                    code: .unsupportedFormat,
                    context: "MJPEG frame of \(decoded.pointee.width)×\(decoded.pointee.height) (stream \(format.width)×\(format.height))")
            }
            let cw = Int(desc.pointee.log2_chroma_w), ch = Int(desc.pointee.log2_chroma_h)
            var planes = [UnsafePointer<UInt8>?](repeating: nil, count: 4)
            var strides = [Int32](repeating: 0, count: 4)
            withUnsafeBytes(of: decoded.pointee.data) { data in
                let pointers = data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
                withUnsafeBytes(of: decoded.pointee.linesize) { sizes in
                    let lines = sizes.bindMemory(to: Int32.self)
                    for i in 0..<3 {
                        guard let base = pointers[i] else { continue }
                        let (x, y) = i == 0 ? (crop.x, crop.y) : (crop.x >> cw, crop.y >> ch)
                        planes[i] = UnsafePointer(base + y * Int(lines[i]) + x)
                        strides[i] = lines[i]
                    }
                }
            }
            try scale(from: fmt, planes, strides)
        } else {
            guard let input = Self.rawInput(format.pixelFormat), let layout = format.planes, let minimum = format.minimumFrameBytes
            else { throw MovieError(code: .unsupportedFormat, context: "cannot convert \(format.pixelFormat) frames") }
            guard bytes.count >= minimum else {
                throw MovieError(
                    code: .unsupportedFormat,
                    context: "\(format.pixelFormat) frame of \(bytes.count) bytes is too short for \(format.width)×\(format.height)")
            }
            // Where the crop starts in each plane (crop offsets are even: whole chroma samples).
            let bpp = format.pixelFormat.lumaBytesPerPixel ?? 1
            try bytes.withUnsafeBufferPointer { (src) throws(MovieError) in
                var planes = [UnsafePointer<UInt8>?](repeating: nil, count: 4)
                var strides = [Int32](repeating: 0, count: 4)
                for (i, plane) in layout.enumerated() {
                    let (x, y) = i == 0 ? (crop.x * bpp, crop.y) : (format.pixelFormat == .nv12 ? crop.x : crop.x / 2, crop.y / 2)
                    planes[i] = src.baseAddress! + plane.offset + y * plane.bytesPerLine + x
                    strides[i] = Int32(plane.bytesPerLine)
                }
                try scale(from: input, planes, strides)
            }
        }
    }

    /// libswscale's name for an uncompressed camera format.
    static func rawInput(_ format: PixelFormat) -> AVPixelFormat? {
        switch format {
        case .yuyv: AV_PIX_FMT_YUYV422
        case .yuv420: AV_PIX_FMT_YUV420P
        case .nv12: AV_PIX_FMT_NV12
        case .rgb24: AV_PIX_FMT_RGB24
        case .bgr24: AV_PIX_FMT_BGR24
        default: nil
        }
    }

    private func decode(
        _ jpeg: [UInt8], _ decoder: UnsafeMutablePointer<AVCodecContext>, _ frame: UnsafeMutablePointer<AVFrame>,
        _ packet: UnsafeMutablePointer<AVPacket>
    ) throws(MovieError) {
        av_packet_unref(packet)
        let rc = av_new_packet(packet, Int32(jpeg.count))
        guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "allocating a packet") }
        jpeg.withUnsafeBytes { packet.pointee.data.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: jpeg.count) }
        let sent = avcodec_send_packet(decoder, packet)
        guard sent >= 0 else { throw MovieError(code: .codec, averror: sent, "decoding an MJPEG frame") }
        let got = avcodec_receive_frame(decoder, frame)
        guard got >= 0 else { throw MovieError(code: .codec, averror: got, "decoding an MJPEG frame") }
    }

    private func scale(from input: AVPixelFormat, _ planes: [UnsafePointer<UInt8>?], _ strides: [Int32]) throws(MovieError) {
        if scaler == nil || scalerInput != input {
            sws_freeContext(scaler)
            scaler = sws_getContext(
                Int32(crop.width), Int32(crop.height), input, Int32(crop.width), Int32(crop.height), AV_PIX_FMT_YUV420P,
                SWS_BILINEAR, nil, nil, nil)
            scalerInput = input
            guard scaler != nil else {
                throw MovieError(
                    code: .unsupportedFormat, context: "libswscale cannot convert \(String(cString: av_get_pix_fmt_name(input))) to yuv420p"
                )
            }
        }
        withUnsafeMutableBytes(of: &picture.pointee.data) { data in
            let dst = data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
            withUnsafeBytes(of: picture.pointee.linesize) { sizes in
                _ = sws_scale(scaler, planes, strides, 0, Int32(crop.height), dst.baseAddress, sizes.bindMemory(to: Int32.self).baseAddress)
            }
        }
    }
}
