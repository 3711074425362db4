#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import Vocabulary

/// One picture from a camera's H.264 (docs/video.md#the-cameras-own-h264): an access unit is
/// no picture by itself, so the run from the IDR frame before it is decoded with libavcodec's
/// H.264 decoder, and the last picture is kept.
public enum H264Picture {
    /// Decodes `run` (Annex B access units, an IDR frame first, the wanted frame last) and
    /// returns the last picture as a YU12 frame (`width` bytes per row) with the last access
    /// unit's sequence and time. Throws when nothing decodes or the picture is not 4:2:0.
    public static func decode(_ run: [VideoFrame]) throws(MovieError) -> VideoFrame {
        guard let last = run.last else { throw MovieError(code: .codec, context: "no H.264 frame to decode") }
        try FFmpegLibraries.load()
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_H264), var ctx = Optional(avcodec_alloc_context3(codec)), ctx != nil else {
            throw MovieError(code: .codec, context: "FFmpeg has no H.264 decoder")
        }
        defer { avcodec_free_context(&ctx) }
        let opened = avcodec_open2(ctx, codec, nil)
        guard opened >= 0 else { throw MovieError(code: .codec, averror: opened, "opening the H.264 decoder") }
        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        defer {
            av_packet_free(&packet)
            av_frame_free(&frame)
        }
        guard let packet, let frame else { throw MovieError(code: .codec, errno: ENOMEM, context: "allocating a packet") }
        var picture: VideoFrame?
        func receive() throws(MovieError) {
            while avcodec_receive_frame(ctx, frame) >= 0 {
                picture = try copy(frame, like: last)
            }
        }
        for unit in run {
            av_packet_unref(packet)
            let rc = av_new_packet(packet, Int32(unit.bytes.count))
            guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "allocating a packet") }
            unit.bytes.withUnsafeBytes {
                packet.pointee.data.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: unit.bytes.count)
            }
            let sent = avcodec_send_packet(ctx, packet)
            guard sent >= 0 else { throw MovieError(code: .codec, averror: sent, "decoding the camera's H.264") }
            try receive()
        }
        // The decoder may hold the last picture back: drain it.
        avcodec_send_packet(ctx, nil)
        try receive()
        guard let picture else {
            throw MovieError(code: .codec, context: "\(run.count) H.264 frame(s) from the camera gave no picture")
        }
        return picture
    }

    /// The decoded picture's planes, packed, as a YU12 frame.
    private static func copy(_ frame: UnsafeMutablePointer<AVFrame>, like unit: VideoFrame) throws(MovieError) -> VideoFrame {
        let fmt = AVPixelFormat(rawValue: frame.pointee.format)
        guard fmt == AV_PIX_FMT_YUV420P || fmt == AV_PIX_FMT_YUVJ420P else {
            throw MovieError(
                code: .unsupportedFormat, context: "the camera's H.264 decodes to \(String(cString: av_get_pix_fmt_name(fmt))), not 4:2:0")
        }
        let w = Int(frame.pointee.width), h = Int(frame.pointee.height)
        let cw = (w + 1) / 2, ch = (h + 1) / 2
        var bytes = [UInt8](repeating: 0, count: w * h + 2 * cw * ch)
        withUnsafeBytes(of: frame.pointee.data) { data in
            let pointers = data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
            withUnsafeBytes(of: frame.pointee.linesize) { sizes in
                let lines = sizes.bindMemory(to: Int32.self)
                bytes.withUnsafeMutableBytes { out in
                    var offset = 0
                    for (i, (rowBytes, rows)) in [(w, h), (cw, ch), (cw, ch)].enumerated() {
                        guard let base = pointers[i] else { continue }
                        for y in 0..<rows {
                            (out.baseAddress! + offset).copyMemory(from: base + y * Int(lines[i]), byteCount: rowBytes)
                            offset += rowBytes
                        }
                    }
                }
            }
        }
        let format = StreamFormat(
            width: w, height: h, pixelFormat: .yuv420, bytesPerLine: w, framesPerSecond: unit.format.framesPerSecond)
        return VideoFrame(bytes: bytes, format: format, sequence: unit.sequence, timestampMicroseconds: unit.timestampMicroseconds)
    }
}
