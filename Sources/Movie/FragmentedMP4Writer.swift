#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import V4L2
import Vocabulary

/// Writes H.264 in fragmented MP4 to an open file, frame by frame, through libavcodec and
/// libavformat.
///
/// The file is `ftyp`, an empty `moov`, then one `moof`+`mdat` fragment per keyframe
/// interval (``FrameTiming``: at most ``H264Settings/keyframeInterval``). Each fragment is
/// flushed and `fdatasync`ed as it is cut, so a kill, a power cut or a full disk loses at
/// most the fragment being recorded, and what is on disk plays. A write that fails (ENOSPC)
/// cuts the file back to the last whole fragment.
///
/// Camera frames in YUYV, YU12, NV12, RGB3, BGR3 or MJPEG are converted (``FrameConverter``)
/// and encoded with the ``EncoderChoice``; frames that already are H.264 are muxed as they
/// are. One instance belongs to one thread (the recording's).
public final class FragmentedMP4Writer {
    public let width: Int
    public let height: Int
    /// The encoder used (the choice, or its fallback when that could not be opened); nil
    /// when the camera's H.264 is muxed as it is.
    public private(set) var encoder: EncoderChoice?
    /// Frames in the file (in whole fragments or the one being recorded).
    public private(set) var frames = 0
    /// Frames in fragments already on disk.
    public private(set) var framesOnDisk = 0
    /// Bytes of whole fragments on disk: where a failed write cuts the file back to.
    public private(set) var bytesOnDisk: Int64 = 0
    /// Camera frames left out because they could not be decoded (damaged MJPEG).
    public private(set) var undecodable = 0
    /// The clock of the recording (presentation times, keyframes).
    public private(set) var timing: FrameTiming

    private let fd: Int32
    private let path: String
    private var output: UnsafeMutablePointer<AVFormatContext>?
    private var stream: UnsafeMutablePointer<AVStream>?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private let converter: FrameConverter?
    private let sink: UnsafeMutablePointer<evc_fd_sink>
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// For encoders that send the parameter sets once (``EncoderSetup/repeatsParameterSets``).
    private var repeater: ParameterSetRepeater?
    private var framesInFragment = 0
    private var failure: MovieError?
    private static let timeBase = AVRational(num: 1, den: Int32(FrameTiming.ticksPerSecond))

    /// Starts the file on `fd` (written from its current offset; `path` names it in errors)
    /// for frames of `format`, cropped to `crop`. `creationTime`: the first frame's
    /// wall-clock time (seconds since 1970), the file's `creation_time`.
    public init(
        fd: Int32, path: String, format: StreamFormat, crop: CropRect? = nil, settings: H264Settings,
        encoder: EncoderChoice?, creationTime: Double
    ) throws(MovieError) {
        try FFmpegLibraries.load()
        av_log_set_level(AV_LOG_ERROR)
        let crop = crop ?? CropRect(x: 0, y: 0, width: format.width, height: format.height)
        self.fd = fd
        self.path = path
        width = crop.width
        height = crop.height
        timing = FrameTiming(
            keyframeInterval: min(settings.keyframeInterval, H264Settings.maximumKeyframeInterval), nominalRate: format.framesPerSecond)
        let converter = format.pixelFormat == .h264 ? nil : try FrameConverter(format: format, crop: crop)
        self.converter = converter
        sink = .allocate(capacity: 1)
        sink.initialize(to: evc_fd_sink(fd: fd, written: 0, error: 0))
        packet = av_packet_alloc()
        if converter != nil {
            guard let encoder else { throw MovieError(code: .noEncoder, context: "no H.264 encoder for \(format.pixelFormat) frames") }
            self.encoder = try openEncoder(encoder, settings, format.framesPerSecond)
        }
        try openMuxer(creationTime: creationTime)
    }

    deinit {
        avcodec_free_context(&codec)
        if let output {
            evc_avio_close_sink(&output.pointee.pb)
            avformat_free_context(output)
        }
        av_packet_free(&packet)
        sink.deallocate()
    }

    /// Opens `choice`, or its software fallback (``EncoderChoice/fallback``); returns the
    /// encoder opened.
    private func openEncoder(_ choice: EncoderChoice, _ settings: H264Settings, _ fps: Double?) throws(MovieError) -> EncoderChoice {
        let opened = try openH264Encoder(
            choice, settings, width: width, height: height, framesPerSecond: fps, timeBase: Self.timeBase, globalHeader: true)
        codec = opened.codec
        repeater = opened.setup.repeatsParameterSets ? ParameterSetRepeater() : nil
        return opened.choice
    }

    private func openMuxer(creationTime: Double) throws(MovieError) {
        var oc: UnsafeMutablePointer<AVFormatContext>?
        var rc = avformat_alloc_output_context2(&oc, nil, "mp4", nil)
        guard rc >= 0, let oc else { throw MovieError(code: .codec, averror: rc, "setting up the MP4 muxer") }
        output = oc
        guard let io = evc_avio_open_sink(sink) else {
            throw MovieError(code: .videoWrite, errno: ENOMEM, context: "allocating the output buffer")
        }
        oc.pointee.pb = io
        oc.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        guard let st = avformat_new_stream(oc, nil) else {
            throw MovieError(code: .codec, errno: ENOMEM, context: "adding the video stream")
        }
        stream = st
        st.pointee.time_base = Self.timeBase
        if let codec {
            rc = avcodec_parameters_from_context(st.pointee.codecpar, codec)
            guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "copying the encoder's parameters") }
        } else {
            st.pointee.codecpar.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            st.pointee.codecpar.pointee.codec_id = AV_CODEC_ID_H264
            st.pointee.codecpar.pointee.width = Int32(width)
            st.pointee.codecpar.pointee.height = Int32(height)
        }
        av_dict_set(&oc.pointee.metadata, "creation_time", Self.iso8601(creationTime), 0)
        av_dict_set(&st.pointee.metadata, "creation_time", Self.iso8601(creationTime), 0)
        av_dict_set(&oc.pointee.metadata, "encoder", "evcapture", 0)
        // Fragments cut by hand at each keyframe (frag_custom); without the encoder's
        // parameter sets up front (the camera's own H.264), the moov waits for the first
        // fragment, which carries them.
        var flags = "frag_custom+empty_moov+default_base_moof"
        if st.pointee.codecpar.pointee.extradata_size == 0 { flags += "+delay_moov" }
        var options: OpaquePointer?
        av_dict_set(&options, "movflags", flags, 0)
        rc = avformat_write_header(oc, &options)
        av_dict_free(&options)
        guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "writing the MP4 header of \(path)") }
        try flush()
    }

    /// Appends one camera frame taken at `micros` (its kernel timestamp). Throws when it
    /// cannot be encoded or written; after a write failure the file holds the fragments
    /// before it, and the writer takes no more frames.
    public func append(_ bytes: [UInt8], at micros: Int64) throws(MovieError) {
        if let failure { throw failure }
        if let converter {
            // A damaged camera frame (a webcam's broken JPEG) is left out and counted; the
            // recording goes on.
            do { try converter.convert(bytes) } catch { undecodable += 1; return }
        }
        let (pts, duration, keyframe) = timing.frame(at: micros)
        if let converter, let codec {
            let picture = converter.picture
            picture.pointee.pts = pts
            picture.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
            evc_frame_set_duration(picture, duration)
            let rc = avcodec_send_frame(codec, picture)
            guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "encoding a frame") }
            try drainEncoder()
        } else {
            guard let packet else { return }
            av_packet_unref(packet)
            let rc = av_new_packet(packet, Int32(bytes.count))
            guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "allocating a packet") }
            bytes.withUnsafeBytes { packet.pointee.data.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: bytes.count) }
            packet.pointee.pts = pts
            packet.pointee.dts = pts
            packet.pointee.duration = duration
            if Self.isKeyframe(annexB: bytes) || keyframe && framesInFragment == 0 { packet.pointee.flags |= AV_PKT_FLAG_KEY }
            try write(packet)
        }
    }

    /// Whether an H.264 access unit (Annex B) holds an IDR slice (NAL type 5).
    public static func isKeyframe(annexB bytes: [UInt8]) -> Bool { AnnexB.containsIDR(bytes) }

    /// Encodes what the encoder still holds, writes the last fragment and the index, and
    /// flushes. On a write failure the file is cut back to its last whole fragment and the
    /// error is thrown: what is on disk still plays.
    public func finish() throws(MovieError) {
        if failure == nil, let codec {
            avcodec_send_frame(codec, nil)
            try drainEncoder()
        }
        if let failure { throw failure }
        guard let output else { return }
        let rc = av_write_trailer(output)
        avio_flush(output.pointee.pb)
        if rc < 0 || sink.pointee.error != 0 {
            try fail(MovieError(code: .videoWrite, averror: rc < 0 ? rc : -sink.pointee.error, "finishing \(path)"))
        }
        fdatasync(fd)
        framesOnDisk = frames
        bytesOnDisk = sink.pointee.written
    }

    private func drainEncoder() throws(MovieError) {
        guard let codec, let packet else { return }
        while true {
            let rc = avcodec_receive_packet(codec, packet)
            if rc == evc_averror_eagain() || rc == evc_averror_eof() { return }
            guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "encoding a frame") }
            if repeater != nil {
                guard try repeatParameterSets(packet) else { continue }
            }
            try write(packet)
        }
    }

    /// Runs the encoder's packet through ``repeater``: false when it held no picture (its
    /// parameter sets wait for the next one).
    private func repeatParameterSets(_ packet: UnsafeMutablePointer<AVPacket>) throws(MovieError) -> Bool {
        guard let data = packet.pointee.data, packet.pointee.size > 0 else { return true }
        let bytes = Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size)))
        guard let out = repeater?.process(bytes) else {
            av_packet_unref(packet)
            return false
        }
        guard out.count != bytes.count else { return true }
        let (pts, dts, duration, flags) = (packet.pointee.pts, packet.pointee.dts, packet.pointee.duration, packet.pointee.flags)
        av_packet_unref(packet)
        let rc = av_new_packet(packet, Int32(out.count))
        guard rc >= 0 else { throw MovieError(code: .codec, averror: rc, "allocating a packet") }
        out.withUnsafeBytes { packet.pointee.data.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: out.count) }
        (packet.pointee.pts, packet.pointee.dts, packet.pointee.duration, packet.pointee.flags) = (pts, dts, duration, flags)
        return true
    }

    /// Muxes one packet; a keyframe first cuts the fragment before it.
    private func write(_ packet: UnsafeMutablePointer<AVPacket>) throws(MovieError) {
        defer { av_packet_unref(packet) }
        guard let output, let stream else { return }
        if packet.pointee.flags & AV_PKT_FLAG_KEY != 0, framesInFragment > 0 {
            let rc = av_write_frame(output, nil)
            if rc < 0 { try fail(MovieError(code: .videoWrite, averror: rc, "writing a fragment of \(path)")) }
            try flush()
            framesOnDisk = frames
            framesInFragment = 0
        }
        if packet.pointee.duration == 0 { packet.pointee.duration = timing.interval }
        packet.pointee.stream_index = 0
        av_packet_rescale_ts(packet, Self.timeBase, stream.pointee.time_base)
        let rc = av_write_frame(output, packet)
        guard rc >= 0 else { try fail(MovieError(code: .videoWrite, averror: rc, "writing a frame of \(path)")) }
        frames += 1
        framesInFragment += 1
    }

    /// Pushes what the muxer wrote to the file and to the disk; notes the file's end.
    private func flush() throws(MovieError) {
        guard let output else { return }
        avio_flush(output.pointee.pb)
        if sink.pointee.error != 0 {
            try fail(MovieError(code: .videoWrite, averror: -sink.pointee.error, "writing \(path)"))
        }
        fdatasync(fd)
        bytesOnDisk = sink.pointee.written
    }

    /// Cuts the file back to its last whole fragment and remembers why.
    private func fail(_ error: MovieError) throws(MovieError) -> Never {
        _ = ftruncate(fd, off_t(bytesOnDisk))
        failure = error
        frames = framesOnDisk
        throw error
    }

    static func iso8601(_ seconds: Double) -> String {
        var t = time_t(seconds.rounded(.down))
        var parts = tm()
        gmtime_r(&t, &parts)
        let micros = Int(((seconds - seconds.rounded(.down)) * 1_000_000).rounded(.down))
        func pad(_ v: Int, _ n: Int) -> String { String(repeating: "0", count: max(0, n - String(v).count)) + String(v) }
        return "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1, 2))-\(pad(Int(parts.tm_mday), 2))T"
            + "\(pad(Int(parts.tm_hour), 2)):\(pad(Int(parts.tm_min), 2)):\(pad(Int(parts.tm_sec), 2)).\(pad(micros, 6))Z"
    }
}
