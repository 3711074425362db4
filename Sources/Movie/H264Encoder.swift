#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import V4L2

/// Opens an FFmpeg H.264 encoder for `width`×`height` YUV 4:2:0 pictures: no B-frames (each
/// frame's packet comes out at once), a keyframe at least every `keyframeInterval` ticks of
/// `timeBase`'s 90 kHz clock, the rate control of `settings`. `globalHeader`: SPS and PPS in
/// the codec's extradata (an MP4's `avcC`) instead of before each IDR frame in the stream (a
/// live stream, which a viewer joins at any keyframe).
func openH264Encoder(
    _ choice: EncoderChoice, _ settings: H264Settings, width: Int, height: Int, framesPerSecond fps: Double?,
    keyframeInterval: Int64, timeBase: AVRational, globalHeader: Bool
) throws(MovieError) -> UnsafeMutablePointer<AVCodecContext> {
    guard let found = avcodec_find_encoder_by_name(choice.name), var ctx = Optional(avcodec_alloc_context3(found)), let c = ctx else {
        throw MovieError(code: .noEncoder, context: "FFmpeg has no encoder \(choice.name)")
    }
    let rate = fps.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? 30
    c.pointee.width = Int32(width)
    c.pointee.height = Int32(height)
    c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
    c.pointee.time_base = timeBase
    c.pointee.framerate = AVRational(num: Int32((rate * 1000).rounded()), den: 1000)
    // Frames, as an upper bound: a recording places its keyframes by time (FrameTiming).
    c.pointee.gop_size = Int32(max(1, (rate * Double(keyframeInterval) / Double(FrameTiming.ticksPerSecond)).rounded(.down)))
    c.pointee.max_b_frames = 0
    if globalHeader { c.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER) }
    if choice.name == "libx264", case .quality(let crf) = settings.rateControl {
        av_opt_set(c.pointee.priv_data, "crf", "\(crf)", 0)
    } else {
        c.pointee.bit_rate = Int64(settings.bitrate(width: width, height: height, framesPerSecond: rate))
    }
    if choice.name == "libx264" {
        // No lookahead and no B-frames: each frame's packet comes out at once, so a
        // fragment holds exactly the frames sent before its cut, and a live frame is not held back.
        av_opt_set(c.pointee.priv_data, "preset", "veryfast", 0)
        av_opt_set(c.pointee.priv_data, "tune", "zerolatency", 0)
        // A frame asked to be a keyframe is an IDR frame, which a viewer can start from.
        av_opt_set(c.pointee.priv_data, "forced-idr", "1", 0)
    }
    let rc = avcodec_open2(c, found, nil)
    guard rc >= 0 else {
        avcodec_free_context(&ctx)
        throw MovieError(code: .codec, averror: rc, "opening the encoder \(choice.name) at \(width)×\(height)")
    }
    return c
}

/// One encoded frame of a live stream: an H.264 access unit in Annex B.
public struct EncodedFrame: Sendable, Hashable {
    /// The access unit; an IDR frame carries its SPS and PPS before it.
    public var bytes: [UInt8]
    /// The camera frame's kernel timestamp (CLOCK_MONOTONIC µs).
    public var timestampMicroseconds: Int64
    /// An IDR frame: a decoder can start here.
    public var isKeyframe: Bool

    public init(bytes: [UInt8], timestampMicroseconds: Int64, isKeyframe: Bool) {
        self.bytes = bytes
        self.timestampMicroseconds = timestampMicroseconds
        self.isKeyframe = isKeyframe
    }
}

/// Encodes camera frames (YUYV, YU12, NV12, RGB3, BGR3, MJPEG) to H.264 access units for a
/// live stream (docs/live-view.md#h264): Annex B, SPS and PPS before every IDR frame, a
/// keyframe whenever asked (a viewer joined) and at least every
/// ``H264Settings/keyframeInterval``. One instance belongs to one thread.
public final class H264LiveEncoder {
    public let format: StreamFormat
    public let encoder: EncoderChoice
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private let converter: FrameConverter
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var lastPTS: Int64 = .min
    /// Camera frames left out because they could not be decoded (damaged MJPEG).
    public private(set) var undecodable = 0
    /// The encoder's clock: µs, the kernel timestamps' own unit.
    private static let timeBase = AVRational(num: 1, den: 1_000_000)

    public init(format: StreamFormat, settings: H264Settings, encoder: EncoderChoice) throws(MovieError) {
        try FFmpegLibraries.load()
        av_log_set_level(AV_LOG_ERROR)
        self.format = format
        self.encoder = encoder
        converter = try FrameConverter(format: format, crop: CropRect(x: 0, y: 0, width: format.width, height: format.height))
        packet = av_packet_alloc()
        codec = try openH264Encoder(
            encoder, settings, width: format.width, height: format.height, framesPerSecond: format.framesPerSecond,
            keyframeInterval: Int64((settings.keyframeInterval / .milliseconds(1)) * 90), timeBase: Self.timeBase, globalHeader: false)
    }

    deinit {
        avcodec_free_context(&codec)
        av_packet_free(&packet)
    }

    /// Encodes one camera frame taken at `micros`; `keyframe`: make it an IDR frame. Returns
    /// the access units that came out (one per frame with the encoders evcapture sets up;
    /// none for a damaged frame, which is counted in ``undecodable``).
    public func encode(_ bytes: [UInt8], at micros: Int64, keyframe: Bool) throws(MovieError) -> [EncodedFrame] {
        guard let codec, let packet else { return [] }
        do { try converter.convert(bytes) } catch {
            undecodable += 1
            return []
        }
        // Times only go forward (a driver glitch is placed 1 µs after the last frame).
        let pts = max(micros, lastPTS == .min ? micros : lastPTS + 1)
        lastPTS = pts
        let picture = converter.picture
        picture.pointee.pts = pts
        picture.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        var rc = avcodec_send_frame(codec, picture)
        guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "encoding a live frame") }
        var out: [EncodedFrame] = []
        while true {
            rc = avcodec_receive_packet(codec, packet)
            if rc == evc_averror_eagain() || rc == evc_averror_eof() { break }
            guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "encoding a live frame") }
            let unit = [UInt8](UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
            out.append(
                EncodedFrame(
                    bytes: unit, timestampMicroseconds: packet.pointee.pts,
                    isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0 || AnnexB.containsIDR(unit)))
            av_packet_unref(packet)
        }
        return out
    }
}
