#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import V4L2
import Vocabulary

/// An FFmpeg H.264 encoder opened by ``openH264Encoder(_:_:width:height:framesPerSecond:timeBase:globalHeader:)``.
struct OpenedH264Encoder {
    var codec: UnsafeMutablePointer<AVCodecContext>
    /// The encoder opened: the choice, or its software fallback.
    var choice: EncoderChoice
    /// What it was told (``EncoderSetup``): whether its packets need a ``ParameterSetRepeater``.
    var setup: EncoderSetup
}

/// Opens the H.264 encoder of `choice` for `width`×`height` YUV 4:2:0 pictures, set up as
/// ``EncoderSetup`` says: no B-frames (each frame's packet comes out at once), a keyframe
/// at least every ``H264Settings/keyframeInterval``, the rate control of `settings`.
/// `globalHeader`: SPS and PPS wanted in the codec's extradata (an MP4's `avcC`), for the
/// encoders that can give them there; otherwise they come in the stream before each IDR frame
/// (a live stream, which a viewer joins at any keyframe). When the choice cannot be opened and
/// has a software fallback (``EncoderChoice/fallback``: the hardware encoder under `auto`,
/// busy or refusing the size), opens that instead (docs/video.md#which-encoder).
func openH264Encoder(
    _ choice: EncoderChoice, _ settings: H264Settings, width: Int, height: Int, framesPerSecond fps: Double?,
    timeBase: AVRational, globalHeader: Bool
) throws(MovieError) -> OpenedH264Encoder {
    do {
        return try openH264Encoder(
            named: choice.name, choice, settings, width: width, height: height, framesPerSecond: fps, timeBase: timeBase,
            globalHeader: globalHeader)
    } catch {
        guard let software = choice.fallback else { throw error }
        let fallback = EncoderChoice(name: software, isHardware: false, reason: "software: \(choice.name) could not be opened (\(error))")
        return try openH264Encoder(
            named: software, fallback, settings, width: width, height: height, framesPerSecond: fps, timeBase: timeBase,
            globalHeader: globalHeader)
    }
}

private func openH264Encoder(
    named name: String, _ choice: EncoderChoice, _ settings: H264Settings, width: Int, height: Int, framesPerSecond fps: Double?,
    timeBase: AVRational, globalHeader: Bool
) throws(MovieError) -> OpenedH264Encoder {
    guard let found = avcodec_find_encoder_by_name(name), var ctx = Optional(avcodec_alloc_context3(found)), let c = ctx else {
        throw MovieError(code: .noEncoder, context: "FFmpeg has no encoder \(name)")
    }
    let setup = EncoderSetup(
        encoder: name, settings: settings, width: width, height: height, framesPerSecond: fps, globalHeader: globalHeader)
    let rate = fps.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? 30
    c.pointee.width = Int32(width)
    c.pointee.height = Int32(height)
    c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
    c.pointee.time_base = timeBase
    c.pointee.framerate = AVRational(num: Int32((rate * 1000).rounded()), den: 1000)
    // Frames, as an upper bound: a recording places its keyframes by time (FrameTiming).
    c.pointee.gop_size = Int32(setup.gopSize)
    c.pointee.max_b_frames = 0
    if setup.globalHeader { c.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER) }
    if let bitRate = setup.bitRate { c.pointee.bit_rate = Int64(bitRate) }
    for (option, value) in setup.privateOptions.sorted(by: { $0.key < $1.key }) {
        av_opt_set(c.pointee.priv_data, option, value, 0)
    }
    let rc = avcodec_open2(c, found, nil)
    guard rc >= 0 else {
        avcodec_free_context(&ctx)
        throw MovieError(code: .codec, averror: rc, "opening the encoder \(name) at \(width)×\(height)")
    }
    return OpenedH264Encoder(codec: c, choice: choice, setup: setup)
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
    /// The encoder used (the choice, or its fallback when that could not be opened).
    public let encoder: EncoderChoice
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private let converter: FrameConverter
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var lastPTS: Int64 = .min
    /// For encoders that send the parameter sets once (``EncoderSetup/repeatsParameterSets``).
    private var repeater: ParameterSetRepeater?
    /// Camera frames left out because they could not be decoded (damaged MJPEG).
    public private(set) var undecodable = 0
    /// The encoder's clock: µs, the kernel timestamps' own unit.
    private static let timeBase = AVRational(num: 1, den: 1_000_000)

    public init(format: StreamFormat, settings: H264Settings, encoder: EncoderChoice) throws(MovieError) {
        try FFmpegLibraries.load()
        av_log_set_level(AV_LOG_ERROR)
        self.format = format
        converter = try FrameConverter(format: format, crop: CropRect(x: 0, y: 0, width: format.width, height: format.height))
        packet = av_packet_alloc()
        let opened = try openH264Encoder(
            encoder, settings, width: format.width, height: format.height, framesPerSecond: format.framesPerSecond,
            timeBase: Self.timeBase, globalHeader: false)
        codec = opened.codec
        self.encoder = opened.choice
        repeater = opened.setup.repeatsParameterSets ? ParameterSetRepeater() : nil
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
            var unit = [UInt8](UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
            if repeater != nil {
                // parameter sets alone wait for the next picture
                guard let withSets = repeater?.process(unit) else {
                    av_packet_unref(packet)
                    continue
                }
                unit = withSets
            }
            out.append(
                EncodedFrame(
                    bytes: unit, timestampMicroseconds: packet.pointee.pts,
                    isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0 || AnnexB.containsIDR(unit)))
            av_packet_unref(packet)
        }
        return out
    }
}
