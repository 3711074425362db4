/// H.264 in Annex B form (`V4L2_PIX_FMT_H264`): NAL units after `00 00 01` start codes.
public enum AnnexB {
    /// Whether an access unit holds an IDR slice (NAL unit type 5): a frame a decoder, and
    /// an MP4 fragment, can start from.
    public static func containsIDR(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var zeros = 0
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == 0 {
                zeros += 1
            } else {
                if b == 1, zeros >= 2, i + 1 < bytes.count {
                    let type = bytes[i + 1] & 0x1F
                    if type == 5 { return true }
                    // A slice of another type (1): the access unit's picture is not an IDR.
                    if type == 1 { return false }
                }
                zeros = 0
            }
            i += 1
        }
        return false
    }

    /// ``containsIDR(_:)`` for bytes in an array.
    public static func containsIDR(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { containsIDR($0) }
    }
}
