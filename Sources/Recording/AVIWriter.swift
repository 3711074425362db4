/// Writes an MJPEG AVI (RIFF `AVI `, one video stream, an `idx1` index) frame by frame.
#if canImport(Glibc)
import Glibc
#endif
///
/// Layout: `RIFF AVI { LIST hdrl { avih, LIST strl { strh, strf } }, LIST movi { 00dc... }, idx1 }`.
/// The header fields that depend on the frame count and rate are written at ``finish(framesPerSecond:)``,
/// so the file only gets its final name (through ``AtomicFile``) once it is complete.
///
/// AVI 1.0 offsets are 32-bit; ``maximumBytes`` (1 GiB by default, which every reader
/// accepts) bounds a recording, after which ``append(jpeg:)`` reports `false`.
///
/// A full disk loses no more than the frame being written: a failed ``append(jpeg:)`` cuts
/// the file back to the last whole frame, and ``finish(framesPerSecond:)`` makes room for
/// the index by dropping frames from the end when the disk has none left, so what was
/// recorded is a valid, playable file.
public final class AVIWriter {
    public let width: Int
    public let height: Int
    public let maximumBytes: Int
    public private(set) var frameCount = 0

    private let file: AtomicFile
    private var offset = 0
    private var index: [(offset: UInt32, size: UInt32)] = []
    private var largestFrame = 0

    // Fixed header positions (see `header()`).
    static let moviListStart = 212
    static let moviFourCC = 220
    static let firstChunk = 224

    /// `framesPerSecond`: the nominal rate, in the header until ``finish(framesPerSecond:)``
    /// writes the measured one (what a crash-interrupted file is recovered with).
    public init(
        file: AtomicFile, width: Int, height: Int, maximumBytes: Int = 1 << 30, framesPerSecond: Double = 30
    ) throws(FileWriteError) {
        precondition(width > 0 && height > 0)
        self.file = file
        self.width = width
        self.height = height
        self.maximumBytes = min(maximumBytes, Int(Int32.max) - (1 << 20))
        let (scale, rate) = Self.rational(framesPerSecond)
        let header = Self.header(width: width, height: height, frames: 0, scale: scale, rate: rate, moviSize: 4, riffSize: 0, largest: 0)
        try file.write(header)
        offset = header.count
    }

    /// Appends one JPEG frame; `false` when the size limit would be exceeded (nothing written).
    /// Throws when the frame cannot be written (a full disk); the file then ends with the
    /// last whole frame, ready for ``finish(framesPerSecond:)``.
    public func append(jpeg: [UInt8]) throws(FileWriteError) -> Bool {
        let padded = jpeg.count + (jpeg.count & 1)
        let indexGrowth = 16 * (index.count + 1)
        guard offset + 8 + padded + 8 + indexGrowth <= maximumBytes else { return false }
        var chunk = [UInt8]()
        chunk.reserveCapacity(8 + padded)
        chunk.fourCC("00dc")
        chunk.le32(jpeg.count)
        chunk.append(contentsOf: jpeg)
        if jpeg.count & 1 == 1 { chunk.append(0) }
        do {
            try file.write(chunk)
        } catch {
            // Part of the chunk may be on disk: cut it off, giving its space back.
            try file.truncate(to: offset)
            throw error
        }
        index.append((UInt32(offset - Self.moviFourCC), UInt32(jpeg.count)))
        offset += chunk.count
        frameCount += 1
        largestFrame = max(largestFrame, jpeg.count)
        return true
    }

    /// Writes the index and the final headers, flushes and names the file; returns its path.
    /// `framesPerSecond` is the rate the frames were really captured at.
    /// On a full disk, frames are dropped from the end until the index fits (each frees more
    /// than its 16 index bytes); it throws only when no frame is left.
    public func finish(framesPerSecond: Double) throws(FileWriteError) -> String {
        let (scale, rate) = Self.rational(framesPerSecond)
        var idx: [UInt8]
        while true {
            idx = Self.indexChunk(index)
            do {
                try file.write(idx)
                break
            } catch  where error.code == .noSpace {
                guard let last = index.popLast() else { throw error }
                frameCount -= 1
                offset = Int(last.offset) + Self.moviFourCC
                try file.truncate(to: offset)
            }
        }
        let total = offset + idx.count
        let header = Self.header(
            width: width, height: height, frames: frameCount, scale: scale, rate: rate,
            moviSize: offset - Self.moviListStart - 8, riffSize: total - 8, largest: largestFrame)
        try file.write(header, at: 0)
        return try file.commit()
    }

    /// Removes the partial file.
    public func abandon() { file.abandon() }

    static func indexChunk(_ index: [(offset: UInt32, size: UInt32)]) -> [UInt8] {
        var idx = [UInt8]()
        idx.reserveCapacity(8 + 16 * index.count)
        idx.fourCC("idx1")
        idx.le32(16 * index.count)
        for entry in index {
            idx.fourCC("00dc")
            idx.le32(0x10)  // AVIIF_KEYFRAME: every MJPEG frame is one
            idx.le32(Int(entry.offset))
            idx.le32(Int(entry.size))
        }
        return idx
    }

    /// A rate as dwRate/dwScale: whole rates exactly (30/1), others to 1/1000 fps.
    static func rational(_ fps: Double) -> (scale: Int, rate: Int) {
        let fps = fps.isFinite && fps > 0 ? fps : 30
        if abs(fps - fps.rounded()) < 0.0005 { return (1, Int(fps.rounded())) }
        if abs(fps * 1.001 - (fps * 1.001).rounded()) < 0.0005 { return (1001, Int((fps * 1001).rounded())) }
        return (1000, Int((fps * 1000).rounded()))
    }

    static func header(
        width: Int, height: Int, frames: Int, scale: Int, rate: Int, moviSize: Int, riffSize: Int, largest: Int
    ) -> [UInt8] {
        var h = [UInt8]()
        h.reserveCapacity(firstChunk)
        h.fourCC("RIFF"); h.le32(riffSize); h.fourCC("AVI ")
        h.fourCC("LIST"); h.le32(192); h.fourCC("hdrl")
        // MainAVIHeader
        h.fourCC("avih"); h.le32(56)
        h.le32(Int((1_000_000.0 * Double(scale) / Double(rate)).rounded()))  // dwMicroSecPerFrame
        h.le32(largest * rate / max(scale, 1))  // dwMaxBytesPerSec
        h.le32(0)  // dwPaddingGranularity
        h.le32(0x10)  // dwFlags: AVIF_HASINDEX
        h.le32(frames)  // dwTotalFrames
        h.le32(0)  // dwInitialFrames
        h.le32(1)  // dwStreams
        h.le32(largest + 8)  // dwSuggestedBufferSize
        h.le32(width); h.le32(height)
        h.le32(0); h.le32(0); h.le32(0); h.le32(0)
        h.fourCC("LIST"); h.le32(116); h.fourCC("strl")
        // AVIStreamHeader
        h.fourCC("strh"); h.le32(56)
        h.fourCC("vids"); h.fourCC("MJPG")
        h.le32(0)  // dwFlags
        h.le16(0); h.le16(0)  // wPriority, wLanguage
        h.le32(0)  // dwInitialFrames
        h.le32(scale); h.le32(rate)
        h.le32(0)  // dwStart
        h.le32(frames)  // dwLength
        h.le32(largest + 8)
        h.le32(-1)  // dwQuality: default
        h.le32(0)  // dwSampleSize: varies per frame
        h.le16(0); h.le16(0); h.le16(width); h.le16(height)  // rcFrame
        // BITMAPINFOHEADER
        h.fourCC("strf"); h.le32(40)
        h.le32(40); h.le32(width); h.le32(height)
        h.le16(1); h.le16(24)
        h.fourCC("MJPG")
        h.le32(width * height * 3)
        h.le32(0); h.le32(0); h.le32(0); h.le32(0)
        h.fourCC("LIST"); h.le32(moviSize); h.fourCC("movi")
        assert(h.count == firstChunk)
        return h
    }
}

/// RIFF's little-endian fields (AVI here, the shutter sound's WAV).
extension [UInt8] {
    public mutating func fourCC(_ s: StaticString) {
        precondition(s.utf8CodeUnitCount == 4)
        s.withUTF8Buffer { append(contentsOf: $0) }
    }
    public mutating func le32(_ v: Int) {
        let u = UInt32(truncatingIfNeeded: v)
        append(contentsOf: [UInt8(u & 0xFF), UInt8((u >> 8) & 0xFF), UInt8((u >> 16) & 0xFF), UInt8(u >> 24)])
    }
    public mutating func le16(_ v: Int) {
        let u = UInt16(truncatingIfNeeded: v)
        append(contentsOf: [UInt8(u & 0xFF), UInt8(u >> 8)])
    }
}
