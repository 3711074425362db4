#if canImport(Glibc)
import Glibc
#endif

/// A fragmented MP4 a crash cut short, made whole: its top-level boxes are walked, and the
/// file is cut after the last complete `moof`+`mdat` pair (a box running past the end, or a
/// `moof` whose `mdat` never came, is what the crash interrupted). What stays plays.
public enum MP4Recovery {
    /// What a walk of the top-level boxes found.
    public struct Layout: Sendable, Equatable {
        /// Where the file must end: after the last whole fragment (or the header).
        public var end: Int64
        /// Samples (frames) in the whole fragments.
        public var frames: Int
        /// Whether `ftyp` and `moov` are there (else it is no MP4 evcapture wrote).
        var hasHeader: Bool
    }

    /// Walks `bytes` (a whole file, or the bytes a reader gives back).
    public static func layout(of read: (Int64, Int) -> [UInt8]?, size: Int64) -> Layout {
        var offset: Int64 = 0
        var end: Int64 = 0
        var frames = 0
        var sawFtyp = false, sawMoov = false
        var pendingFragment: (end: Int64, frames: Int)?
        while offset + 8 <= size, let head = read(offset, 16), head.count >= 8 {
            var length = Int64(be32(head, 0))
            let type = String(decoding: head[4..<8], as: UTF8.self)
            var header: Int64 = 8
            if length == 1, head.count >= 16 {
                length = Int64(bitPattern: UInt64(be32(head, 8)) << 32 | UInt64(be32(head, 12)))
                header = 16
            } else if length == 0 {
                length = size - offset  // to the end of the file
            }
            guard length >= header, offset + length <= size else { break }  // cut by the crash
            switch type {
            case "ftyp": sawFtyp = true
            case "moov": sawMoov = true
            case "moof":
                pendingFragment = (offset + length, samples(inMoof: read(offset + header, Int(min(length - header, 1 << 20))) ?? []))
            case "mdat":
                if let fragment = pendingFragment {
                    frames += fragment.frames
                    pendingFragment = nil
                }
            default: break
            }
            offset += length
            // A header box, or a fragment with its data: the file may end here.
            if type != "moof", sawFtyp, sawMoov { end = offset }
        }
        return Layout(end: end, frames: frames, hasHeader: sawFtyp && sawMoov)
    }

    /// Cuts the file open at `fd` to its last whole fragment; returns the layout (nil when
    /// it is not an MP4 at all).
    public static func repair(fd: Int32) -> Layout? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let layout = layout(
            of: { offset, count in
                var buffer = [UInt8](repeating: 0, count: count)
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
                return n < 0 ? nil : Array(buffer.prefix(n))
            }, size: Int64(st.st_size))
        guard layout.hasHeader else { return nil }
        if layout.end < Int64(st.st_size) { _ = ftruncate(fd, off_t(layout.end)) }
        return layout
    }

    /// The sample counts of the `trun` boxes in the `traf` boxes of a `moof`'s payload.
    static func samples(inMoof payload: [UInt8]) -> Int {
        var total = 0
        for traf in children(of: payload, named: "traf") {
            for trun in children(of: traf, named: "trun") where trun.count >= 8 {
                total += Int(be32(trun, 4))  // after version and flags
            }
        }
        return total
    }

    private static func children(of payload: [UInt8], named name: String) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = 0
        while i + 8 <= payload.count {
            let length = Int(be32(payload, i))
            guard length >= 8, i + length <= payload.count else { break }
            if String(decoding: payload[(i + 4)..<(i + 8)], as: UTF8.self) == name {
                out.append(Array(payload[(i + 8)..<(i + length)]))
            }
            i += length
        }
        return out
    }

    private static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }
}
