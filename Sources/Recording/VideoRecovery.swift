#if canImport(Glibc)
import Glibc
#endif
import Movie

/// Recordings interrupted by a crash are kept, never deleted: at start, each unlocked
/// `.evcapture-<random>~<name>.part` (``AtomicFile``) is finished where its format needs it
/// and given its name. An MP4 is cut after its last whole fragment (``MP4Recovery``); an
/// AVI after its last whole frame, with the index and the header's counts written
/// (``AVIWriter/repair(fd:)``). A file with no frame at all is removed: nothing was recorded.
public enum VideoRecovery {
    /// Recovers the interrupted recordings in `directory`; returns them, and the names of
    /// the empty ones removed.
    public static func recover(in directory: String) -> (recovered: [RecoveredVideo], removed: [String]) {
        guard let dir = opendir(directory) else { return ([], []) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if AtomicFile.intendedName(ofTemporary: name) != nil { names.append(name) }
        }
        closedir(dir)
        var recovered: [RecoveredVideo] = []
        var removed: [String] = []
        for name in names.sorted() {
            switch recover(name, in: directory) {
            case .some(.some(let video)): recovered.append(video)
            case .some(.none): removed.append(name)
            case .none: break
            }
        }
        return (recovered, removed)
    }

    /// nil: left as it is (being written, unreadable); .some(nil): empty and removed.
    static func recover(_ name: String, in directory: String) -> RecoveredVideo?? {
        let path = directory + "/" + name
        let fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return nil }  // a live daemon's
        let intended = AtomicFile.intendedName(ofTemporary: name) ?? ""
        let format = VideoFormat(fileName: intended) ?? sniff(fd)
        var frames = 0
        switch format {
        case .mp4: frames = MP4Recovery.repair(fd: fd)?.frames ?? 0
        case .avi: frames = AVIWriter.repair(fd: fd) ?? 0
        case nil: frames = 0
        }
        guard let format, frames > 0 else {
            unlink(path)
            return .some(nil)
        }
        fsync(fd)
        let final = recoveredName(intended: intended, temporary: name, format: format)
        guard let target = try? AtomicFile.claim(path, as: final, in: directory) else { return nil }
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
        return .some(RecoveredVideo(path: target, temporaryName: name, format: format, frames: frames))
    }

    /// The name a recovered file gets: the one it was to get; for a name too long to carry,
    /// `evcapture-recovered-<random>` with the format's extension.
    static func recoveredName(intended: String, temporary: String, format: VideoFormat) -> String {
        if !intended.isEmpty { return intended }
        let random = temporary.dropFirst(".evcapture-".count).prefix { $0 != "~" && $0 != "." }
        return "evcapture-recovered-\(random)\(format.fileExtension)"
    }

    /// The format by the first bytes: `RIFF....AVI ` or `....ftyp`.
    static func sniff(_ fd: Int32) -> VideoFormat? {
        var head = [UInt8](repeating: 0, count: 12)
        guard head.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 12, 0) }) == 12 else { return nil }
        if head[0..<4].elementsEqual("RIFF".utf8), head[8..<12].elementsEqual("AVI ".utf8) { return .avi }
        if head[4..<8].elementsEqual("ftyp".utf8) { return .mp4 }
        return nil
    }
}

extension AVIWriter {
    /// Finishes an AVI a crash interrupted (open at `fd`): cut after its last whole frame,
    /// index and header counts written with the rate the header was started with. Returns
    /// the frames kept; nil when it is not an AVI this writer started.
    public static func repair(fd: Int32) -> Int? {
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size >= firstChunk else { return nil }
        var header = [UInt8](repeating: 0, count: firstChunk)
        guard header.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, firstChunk, 0) }) == firstChunk,
            header[0..<4].elementsEqual("RIFF".utf8), header[8..<12].elementsEqual("AVI ".utf8),
            header[moviFourCC..<(moviFourCC + 4)].elementsEqual("movi".utf8)
        else { return nil }
        func le32(_ i: Int) -> Int { Int(header[i]) | Int(header[i + 1]) << 8 | Int(header[i + 2]) << 16 | Int(header[i + 3]) << 24 }
        let (width, height, scale, rate) = (le32(64), le32(68), max(1, le32(128)), max(1, le32(132)))
        var index: [(offset: UInt32, size: UInt32)] = []
        var offset = firstChunk
        var largest = 0
        let size = Int(st.st_size)
        var chunk = [UInt8](repeating: 0, count: 8)
        while offset + 8 <= size, chunk.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 8, off_t(offset)) }) == 8 {
            guard chunk[0..<4].elementsEqual("00dc".utf8) else { break }  // idx1, or garbage
            let length = Int(chunk[4]) | Int(chunk[5]) << 8 | Int(chunk[6]) << 16 | Int(chunk[7]) << 24
            let next = offset + 8 + length + (length & 1)
            guard next <= size else { break }  // the frame the crash cut
            index.append((UInt32(offset - moviFourCC), UInt32(length)))
            largest = max(largest, length)
            offset = next
        }
        guard !index.isEmpty, ftruncate(fd, off_t(offset)) == 0 else { return index.isEmpty ? 0 : nil }
        let idx = indexChunk(index)
        let fixed = Self.header(
            width: width, height: height, frames: index.count, scale: scale, rate: rate,
            moviSize: offset - moviListStart - 8, riffSize: offset + idx.count - 8, largest: largest)
        let wroteIndex = idx.withUnsafeBytes { pwrite(fd, $0.baseAddress, idx.count, off_t(offset)) } == idx.count
        let wroteHeader = fixed.withUnsafeBytes { pwrite(fd, $0.baseAddress, fixed.count, 0) } == fixed.count
        return wroteIndex && wroteHeader ? index.count : nil
    }
}
