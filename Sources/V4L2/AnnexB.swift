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

    /// The NAL units of an access unit: each one's type (the low 5 bits of its first byte)
    /// and its bytes from its start code (`00 00 01`, or `00 00 00 01`) to the next one's.
    /// Bytes before the first start code are not a NAL unit and are left out.
    public static func nalUnits(_ bytes: [UInt8]) -> [(type: UInt8, range: Range<Int>)] {
        var starts: [(codeAt: Int, type: UInt8)] = []
        var zeros = 0
        for i in bytes.indices {
            let b = bytes[i]
            if b == 0 {
                zeros += 1
                continue
            }
            if b == 1, zeros >= 2, i + 1 < bytes.count {
                starts.append((codeAt: i - min(zeros, 3), type: bytes[i + 1] & 0x1F))
            }
            zeros = 0
        }
        return starts.indices.map { n in
            (type: starts[n].type, range: starts[n].codeAt..<(n + 1 < starts.count ? starts[n + 1].codeAt : bytes.count))
        }
    }
}
