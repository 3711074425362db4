import V4L2

/// Puts an H.264 stream's parameter sets (SPS and PPS) before every keyframe that lacks
/// them, for encoders that send them only once (``EncoderSetup/repeatsParameterSets``:
/// FFmpeg's `h264_v4l2m2m`, the Raspberry Pi 4's hardware encoder). A player that joins the
/// stream at any keyframe, or a fragment read on its own, then has what it needs to decode
/// (docs/video.md#which-encoder). Pure: access units in, access units out.
struct ParameterSetRepeater: Sendable {
    /// The latest SPS and PPS NAL units seen, with their start codes.
    public private(set) var parameterSets: [UInt8] = []
    /// Parameter sets that came in an access unit of their own, for the next picture.
    private var pending = false

    public init() {}

    static let sps: UInt8 = 7
    static let pps: UInt8 = 8
    static let idr: UInt8 = 5
    static let slice: UInt8 = 1

    /// The access unit to write for `bytes` (Annex B): unchanged, or with the parameter
    /// sets in front when it is a keyframe without them (or the first picture after sets that
    /// came alone). nil when `bytes` holds no picture, only parameter sets: they are kept and
    /// go in front of the next picture, which a muxer needs (a sample is a picture).
    public mutating func process(_ bytes: [UInt8]) -> [UInt8]? {
        let units = AnnexB.nalUnits(bytes)
        let sets = units.filter { $0.type == Self.sps || $0.type == Self.pps }
        let hasSPS = sets.contains { $0.type == Self.sps }
        if hasSPS {
            parameterSets = sets.flatMap { bytes[$0.range] }
        }
        let hasPicture = units.contains { $0.type == Self.idr || $0.type == Self.slice }
        guard hasPicture else {
            if hasSPS { pending = true }
            return nil
        }
        let isKeyframe = units.contains { $0.type == Self.idr }
        defer { pending = false }
        if !hasSPS, !parameterSets.isEmpty, isKeyframe || pending {
            return parameterSets + bytes
        }
        return bytes
    }
}
