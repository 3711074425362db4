#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import V4L2
import Vocabulary

/// Why a video could not be encoded or written, with FFmpeg's message and what was being
/// done: the one error shape, ``SystemError`` (docs/architecture.md#errors-and-habits), under
/// this layer's name, with the codes below.
public typealias MovieError = SystemError

extension SystemError.Code {
    /// No usable H.264 encoder (the configured one is missing, or none at all).
    public static let noEncoder = SystemError.Code("no encoder")
    /// The encoder or decoder refused a frame or its settings.
    public static let codec = SystemError.Code("codec")
    /// The camera's frames are in a format the recording cannot take.
    public static let unsupportedFormat = SystemError.Code("unsupported format")
    /// Writing the video file failed (see the errno: ENOSPC is a full disk).
    public static let videoWrite = SystemError.Code("write")
}

extension SystemError {
    /// From an FFmpeg return code: its errno when it carries one (then a write failure unless
    /// the codec said it), its message either way.
    init(code: Code, averror: Int32, _ context: String) {
        var buffer = [CChar](repeating: 0, count: 128)
        av_strerror(averror, &buffer, buffer.count)
        let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let e = evc_averror_errno(averror)
        self.init(code: e == 0 || code == .codec ? code : .videoWrite, errno: e, context: "\(context): \(message)")
    }
}

/// FFmpeg's libraries, loaded on first use (not linked: see Sources/CFFmpeg/loader.c).
enum FFmpegLibraries {
    /// Why they cannot be loaded; nil once they are.
    static let failure: String? = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard evc_ffmpeg_load(&buffer, buffer.count) != 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    static func load() throws(MovieError) {
        if let failure {
            throw MovieError(
                code: .noEncoder, context: "FFmpeg's libraries are not installed (\(failure)): apt-get install libavformat59 libswscale6")
        }
    }
}

extension EncoderChoice {
    /// The encoders this process's FFmpeg has, among ``H264Settings/knownEncoders``.
    static var availableEncoders: Set<String> {
        guard FFmpegLibraries.failure == nil else { return [] }
        return Set(H264Settings.knownEncoders.filter { avcodec_find_encoder_by_name($0) != nil })
    }

    /// The system's V4L2 memory-to-memory H.264 encoder, looked for once per process (a
    /// board's hardware does not change while it runs).
    static let hardwareNode: String? = h264EncoderNode(among: videoNodes().map(\.path))

    /// The encoder a recording with `settings` uses on this system, and why.
    public static func current(_ settings: H264Settings) -> Result<EncoderChoice, MovieError> {
        do { try FFmpegLibraries.load() } catch { return .failure(error) }
        let available = availableEncoders
        let wantsHardware = settings.encoder == .automatic || settings.encoder == .named("h264_v4l2m2m")
        let node = wantsHardware && available.contains("h264_v4l2m2m") ? hardwareNode : nil
        return choose(settings.encoder, hardwareNode: node, available: available)
    }
}
