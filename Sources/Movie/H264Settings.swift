#if canImport(Glibc)
import Glibc
#endif

/// How a recording's H.264 is made: which encoder, its rate control, how often a keyframe
/// comes (each one starts a fragment of the MP4, so it bounds what a crash can lose).
public struct H264Settings: Sendable, Hashable {
    /// Which encoder.
    public enum Encoder: Sendable, Hashable, CustomStringConvertible {
        /// The hardware encoder when the system has one, else software (``EncoderChoice``).
        case automatic
        /// An FFmpeg encoder by name: `h264_v4l2m2m`, `libx264`, `libopenh264`.
        case named(String)
        public var description: String {
            switch self {
            case .automatic: "auto"
            case .named(let n): n
            }
        }
    }

    /// How many bits the encoder spends.
    public enum RateControl: Sendable, Hashable {
        /// Constant quality (x264's CRF, 0–51: lower is better and bigger; 23 is x264's
        /// default). Encoders without it get a bitrate for the frame size (``bitrate(width:height:framesPerSecond:)``).
        case quality(Int)
        /// A target in bits per second.
        case bitrate(Int)
    }

    public var encoder: Encoder
    public var rateControl: RateControl
    /// At most this long between keyframes, and so between fragments (at most 1 s).
    public var keyframeInterval: Duration

    static let maximumKeyframeInterval = Duration.seconds(1)

    public init(encoder: Encoder = .automatic, rateControl: RateControl = .quality(23), keyframeInterval: Duration = .seconds(1)) {
        self.encoder = encoder
        self.rateControl = rateControl
        self.keyframeInterval = keyframeInterval
    }

    /// The encoders evcapture knows how to set up.
    public static let knownEncoders = ["h264_v4l2m2m", "libx264", "libopenh264"]

    /// The bitrate given to an encoder without constant quality: 0.1 bit per pixel per frame
    /// at CRF 23 (about what x264 spends on a webcam scene), doubled per 6 CRF steps down.
    public func bitrate(width: Int, height: Int, framesPerSecond: Double) -> Int {
        switch rateControl {
        case .bitrate(let b): return b
        case .quality(let crf):
            let base = Double(width * height) * max(framesPerSecond, 1) * 0.1
            let scaled = base * pow(2, Double(23 - crf) / 6)
            return max(100_000, Int(scaled.rounded()))
        }
    }
}

/// Which encoder a recording uses, and why: what `evcapture controls` reports.
public struct EncoderChoice: Sendable, Hashable, CustomStringConvertible {
    /// The FFmpeg encoder's name.
    public var name: String
    /// Whether it is a hardware encoder (V4L2 memory-to-memory).
    var isHardware: Bool
    /// Why this one, in a sentence.
    public var reason: String
    /// The software encoder a recording uses when this hardware one cannot be opened (it is
    /// busy, or refuses the size): set under `auto` only — a named encoder has none.
    public var fallback: String?

    public init(name: String, isHardware: Bool, reason: String, fallback: String? = nil) {
        self.name = name
        self.isHardware = isHardware
        self.reason = reason
        self.fallback = fallback
    }

    public var description: String { "\(name) (\(reason))" }

    /// The choice for `requested`, given the V4L2 H.264 encoder node (nil: none) and the
    /// encoders this FFmpeg has. Pure: ``EncoderChoice/current(_:)`` gathers the facts.
    public static func choose(
        _ requested: H264Settings.Encoder, hardwareNode: String?, available: Set<String>
    ) -> Result<EncoderChoice, MovieError> {
        switch requested {
        case .named(let name):
            guard available.contains(name) else {
                let have = H264Settings.knownEncoders.filter(available.contains).joined(separator: ", ")
                return .failure(
                    MovieError(
                        code: .noEncoder,
                        context:
                            "the video encoder \(name) is not in this system's FFmpeg (it has: \(have.isEmpty ? "none of evcapture's" : have))"
                    ))
            }
            if name == "h264_v4l2m2m" {
                guard let node = hardwareNode else {
                    return .failure(
                        MovieError(
                            code: .noEncoder, context: "h264_v4l2m2m asked for, but no V4L2 memory-to-memory H.264 encoder was found"))
                }
                return .success(EncoderChoice(name: name, isHardware: true, reason: "configured; hardware encoder \(node)"))
            }
            return .success(EncoderChoice(name: name, isHardware: false, reason: "configured"))
        case .automatic:
            if let node = hardwareNode, available.contains("h264_v4l2m2m") {
                let software = ["libx264", "libopenh264"].first(where: available.contains)
                return .success(
                    EncoderChoice(name: "h264_v4l2m2m", isHardware: true, reason: "hardware H.264 encoder \(node)", fallback: software))
            }
            let why =
                hardwareNode == nil
                ? "no V4L2 hardware H.264 encoder on this system"
                : "FFmpeg here has no h264_v4l2m2m for the hardware encoder \(hardwareNode!)"
            for software in ["libx264", "libopenh264"] where available.contains(software) {
                return .success(EncoderChoice(name: software, isHardware: false, reason: "software: \(why)"))
            }
            return .failure(
                MovieError(code: .noEncoder, context: "no H.264 encoder: \(why), and FFmpeg has neither libx264 nor libopenh264"))
        }
    }
}

/// How the codec context is set up for one encoder: what a recording (``FragmentedMP4Writer``)
/// and the live stream (``H264LiveEncoder``) hand FFmpeg, as data (docs/video.md#which-encoder).
struct EncoderSetup: Sendable, Hashable {
    /// At most this many frames between keyframes (keyframes are placed by time, ``FrameTiming``).
    var gopSize: Int
    /// The bitrate, for encoders without constant quality; nil: the encoder's own rate control.
    var bitRate: Int?
    /// The encoder's private options (`av_opt_set` on its private data).
    var privateOptions: [String: String]
    /// Whether the parameter sets go in the codec's extradata (an MP4's `avcC`) only
    /// (`AV_CODEC_FLAG_GLOBAL_HEADER`): when asked for, by the encoders that can give them up
    /// front. FFmpeg's `h264_v4l2m2m` cannot (it sends them once, before the first picture,
    /// in FFmpeg 5.1 and 7.1 alike). Without it, libx264 and libopenh264 put them before
    /// every IDR frame themselves.
    var globalHeader: Bool
    /// Whether the writer puts the stream's SPS and PPS before every keyframe that lacks
    /// them (``ParameterSetRepeater``): a stream joined at any keyframe then decodes.
    /// `h264_v4l2m2m` has no option for it (FFmpeg 5.1 and 7.1), and its `dump_extra`
    /// bitstream filter needs the global header that encoder does not give.
    var repeatsParameterSets: Bool

    /// The setup of `encoder` for pictures at `framesPerSecond` (nil or not finite: 30);
    /// `globalHeader`: the parameter sets wanted in the extradata (a recording), or in the
    /// stream (a live stream).
    public init(encoder: String, settings: H264Settings, width: Int, height: Int, framesPerSecond: Double?, globalHeader: Bool = true) {
        let rate = framesPerSecond.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? 30
        let interval = min(settings.keyframeInterval, H264Settings.maximumKeyframeInterval) / .seconds(1)
        gopSize = Int(max(1, (rate * interval).rounded(.down)))
        privateOptions = [:]
        switch encoder {
        case "libx264":
            // No lookahead and no B-frames: each frame's packet comes out at once, so a
            // fragment holds exactly the frames sent before its cut.
            privateOptions["preset"] = "veryfast"
            privateOptions["tune"] = "zerolatency"
            // A frame asked to be a keyframe is an IDR frame, which a viewer can start from.
            privateOptions["forced-idr"] = "1"
            if case .quality(let crf) = settings.rateControl {
                privateOptions["crf"] = "\(crf)"
                bitRate = nil
            } else {
                bitRate = settings.bitrate(width: width, height: height, framesPerSecond: rate)
            }
            self.globalHeader = globalHeader
            repeatsParameterSets = false
        case "h264_v4l2m2m":
            bitRate = settings.bitrate(width: width, height: height, framesPerSecond: rate)
            self.globalHeader = false
            repeatsParameterSets = true
        default:
            bitRate = settings.bitrate(width: width, height: height, framesPerSecond: rate)
            self.globalHeader = globalHeader
            repeatsParameterSets = false
        }
    }
}
