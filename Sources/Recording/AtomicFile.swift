#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import LinuxIO

/// A file-system failure while writing an output file, with the path and what was done: the
/// one error shape, ``SystemError`` (docs/architecture.md#errors-and-habits), under this
/// layer's name (a full disk is `.noSpace`).
public typealias FileWriteError = SystemError

/// An output file written under a hidden temporary name in its final directory, flushed to
/// disk and only then given its final name: a reader never sees a partial file under the
/// final name, and a crash leaves at most a `.evcapture-*.part` file behind, which
/// ``removeLeftovers(in:)`` removes at the next start. The temporary file is locked (`flock`)
/// while it is written, so a leftover is told from a file being written by a live process.
///
/// The final name is never overwritten: when it exists, `-1`, `-2`, ... is added before the
/// extension, past the highest number already there (a pattern without a unique token,
/// `photo.jpg`, works for any number of files). One instance belongs to one thread.
public final class AtomicFile {
    public let directory: String
    /// The name ``commit()`` gives the file; ``commit(as:)`` sets it when it is known only then.
    public private(set) var finalName: String
    /// The temporary file's path while writing.
    public let temporaryPath: String
    /// The temporary file's descriptor (for a writer that writes it itself, as the MP4 muxer does).
    public private(set) var fd: Int32
    private var finished = false
    /// Bytes written so far (the end of the file).
    public private(set) var size = 0
    /// Tests: the space the file system has left for this file; a write past it writes what
    /// fits and then fails with ENOSPC, as a full disk does. nil: no limit but the disk's.
    var spaceLeft: Int?

    /// `recoverable`: a recording, whose temporary name carries `finalName`
    /// (`.evcapture-<random>~<finalName>.part`), so that what a crash interrupted can be
    /// kept under that name at the next start (``VideoRecovery``) rather than removed.
    public init(directory: String, finalName: String, recoverable: Bool = false) throws(FileWriteError) {
        precondition(!finalName.contains("/" as Character), "file names come from FileNamePattern, which rejects '/'")
        self.directory = directory
        self.finalName = finalName
        var opened: Int32 = -1
        var path = ""
        // NAME_MAX is 255 bytes: a name too long to carry is recovered under a made-up one.
        let carried = recoverable ? "~" + (finalName.utf8.count <= 200 ? finalName : "") : ""
        for _ in 0..<16 {
            let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
            path = directory + "/.evcapture-" + suffix + carried + ".part"
            opened = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if opened >= 0 || errno != EEXIST { break }
        }
        guard opened >= 0 else { throw FileWriteError(errno: errno, context: "creating a file in \(directory)") }
        // Ours until committed or abandoned; freed by the kernel if the process dies.
        _ = flock(opened, LOCK_EX | LOCK_NB)
        fd = opened
        temporaryPath = path
    }

    /// Removes the `.evcapture-*.part` files in `directory` that no process is writing (left
    /// by a kill or a power loss); returns their names. A file another live daemon is
    /// writing is locked and stays; so does a recording's (`~` in its name), which
    /// ``VideoRecovery`` keeps.
    @discardableResult
    public static func removeLeftovers(in directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var removed: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix(".evcapture-"), name.hasSuffix(".part"), !name.contains("~") else { continue }
            let path = directory + "/" + name
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }  // being written
            if unlink(path) == 0 { removed.append(name) }
        }
        return removed
    }

    deinit { abandon() }

    /// `mkdir -p`: makes `path` and its missing parents (mode 0755, less the umask). The
    /// daemon uses it for the default output directory only: a configured one that is
    /// missing (an unmounted card) stays an error rather than filling the root file system.
    static func makeDirectory(_ path: String) throws(FileWriteError) {
        var st = stat()
        if stat(path, &st) == 0 { return }
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw FileWriteError(errno: errno, context: "creating the output directory \(current)")
            }
        }
    }

    /// Appends all of `bytes` (retrying short writes and EINTR). On failure (a full disk:
    /// ENOSPC) part of `bytes` may be in the file: ``size`` says how much.
    public func write(_ bytes: [UInt8]) throws(FileWriteError) {
        var done = 0
        while done < bytes.count {
            var count = bytes.count - done
            if let left = spaceLeft {
                if left == 0 { throw FileWriteError(errno: ENOSPC, context: "writing \(temporaryPath)") }
                count = min(count, left)
            }
            let n: Int
            do {
                n = try retryingEINTR { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, count) } }
            } catch {
                throw FileWriteError(errno: error.errno, context: "writing \(temporaryPath)")
            }
            done += n
            size += n
            spaceLeft = spaceLeft.map { $0 - n }
        }
    }

    /// Cuts the file to its first `length` bytes (giving the rest back to the file system)
    /// and appends from there on.
    public func truncate(to length: Int) throws(FileWriteError) {
        precondition(length <= size, "truncate only shortens")
        guard ftruncate(fd, off_t(length)) == 0, lseek(fd, off_t(length), SEEK_SET) == off_t(length) else {
            throw FileWriteError(errno: errno, context: "truncating \(temporaryPath) to \(length) bytes")
        }
        spaceLeft = spaceLeft.map { $0 + size - length }
        size = length
    }

    /// Overwrites bytes at `offset` (header fields written last).
    public func write(_ bytes: [UInt8], at offset: Int) throws(FileWriteError) {
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard n == bytes.count else {
            throw FileWriteError(errno: n < 0 ? errno : EIO, context: "writing \(temporaryPath) at \(offset)")
        }
    }

    /// fsyncs, closes and renames to the final name (or a numbered variant if it exists);
    /// returns the final path.
    public func commit() throws(FileWriteError) -> String {
        precondition(!finished, "commit called twice")
        guard fsync(fd) == 0 else { throw FileWriteError(errno: errno, context: "flushing \(temporaryPath)") }
        close(fd)
        fd = -1
        let target = try Self.claim(temporaryPath, as: finalName, in: directory)
        finished = true
        syncDirectory()
        return target
    }

    /// Renames `temporaryPath` to `finalName` in `directory`, or to a numbered variant when
    /// that exists (never replacing a file); returns the path it got.
    static func claim(_ temporaryPath: String, as finalName: String, in directory: String) throws(FileWriteError) -> String {
        let (stem, ext) = Self.split(finalName)
        var number = 0
        var scans = 0
        while true {
            let name = number == 0 ? finalName : "\(stem)-\(number)\(ext)"
            let target = directory + "/" + name
            switch Self.renameNoReplace(temporaryPath, target) {
            case 0:
                return target
            case EEXIST:
                // Taken: the first tries step by one (a press id makes names unique, so a
                // clash is rare); then continue past the highest number in the directory,
                // so the thousandth `photo.jpg` costs one directory scan, not a thousand renames.
                number += 1
                if number > 3 {
                    scans += 1
                    guard scans <= 100 else {
                        throw FileWriteError(errno: EEXIST, context: "no free name for \(finalName) in \(directory)")
                    }
                    number = max(number, Self.highestNumber(stem: stem, ext: ext, in: directory) + 1)
                }
            case let e:
                throw FileWriteError(errno: e, context: "renaming \(temporaryPath) to \(target)")
            }
        }
    }

    /// Commits under `name` (a file written before its name was known: a photo prepared at
    /// the press, named when the click is decided).
    public func commit(as name: String) throws(FileWriteError) -> String {
        precondition(!name.contains("/" as Character), "file names come from FileNamePattern, which rejects '/'")
        finalName = name
        return try commit()
    }

    /// The highest N of the files named `stem-N ext` in `directory` (0 when none).
    static func highestNumber(stem: String, ext: String, in directory: String) -> Int {
        guard let dir = opendir(directory) else { return 0 }
        defer { closedir(dir) }
        let prefix = stem + "-"
        var highest = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix(prefix), name.hasSuffix(ext), name.count > prefix.count + ext.count else { continue }
            let digits = name.dropFirst(prefix.count).dropLast(ext.count)
            if digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits) { highest = max(highest, n) }
        }
        return highest
    }

    /// Removes the temporary file (after a failure). Idempotent.
    public func abandon() {
        guard !finished else { return }
        finished = true
        if fd >= 0 { close(fd) }
        fd = -1
        unlink(temporaryPath)
    }

    private func syncDirectory() {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    /// For a recording's temporary file (`.evcapture-<random>~<name>.part`): the name it was
    /// to get (`""` when it was too long to carry); nil for any other file.
    static func intendedName(ofTemporary name: String) -> String? {
        guard name.hasPrefix(".evcapture-"), name.hasSuffix(".part"), let tilde = name.firstIndex(of: "~") else { return nil }
        let intended = name[name.index(after: tilde)...].dropLast(".part".count)
        guard !intended.contains("/"), !intended.hasPrefix(".") else { return "" }
        return String(intended)
    }

    static func split(_ name: String) -> (String, String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }

    /// rename(2) that fails with EEXIST instead of replacing; returns 0 or an errno.
    static func renameNoReplace(_ from: String, _ to: String) -> Int32 {
        if evc_rename_noreplace(from, to) == 0 { return 0 }
        let e = errno
        guard e == EINVAL || e == ENOSYS else { return e }
        // File systems without RENAME_NOREPLACE: link(2) also refuses to replace.
        if link(from, to) == 0 {
            unlink(from)
            return 0
        }
        let le = errno
        guard le == EPERM || le == ENOTSUP else { return le }
        // No hard links either (vfat): check, then rename. Only evcapture writes here, and
        // names carry the press id, so the window cannot be hit by our own writers.
        var st = stat()
        if lstat(to, &st) == 0 { return EEXIST }
        return rename(from, to) == 0 ? 0 : errno
    }
}
