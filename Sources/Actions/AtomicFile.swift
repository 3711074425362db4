#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Capture
import Evdev
import V4L2
import LinuxIO

/// A file-system failure while writing an output file, with the path and what was done.
public struct FileWriteError: Error, CustomStringConvertible, Sendable, Equatable {
    public var errno: Int32
    public var context: String
    public init(errno: Int32, context: String) {
        self.errno = errno
        self.context = context
    }
    public var description: String {
        errno == 0 ? context : "\(context): \(String(cString: strerror(errno)))"
    }
}

/// An output file written under a hidden temporary name in its final directory, flushed to
/// disk and only then given its final name: a reader never sees a partial file under the
/// final name, and a crash leaves at most a `.evcapture-*.part` file behind.
///
/// The final name is never overwritten: when it exists, `-1`, `-2`, ... is added before the
/// extension. One instance belongs to one thread.
public final class AtomicFile {
    public let directory: String
    public let finalName: String
    /// The temporary file's path while writing.
    public let temporaryPath: String
    private(set) var fd: Int32
    private var finished = false

    public init(directory: String, finalName: String) throws(FileWriteError) {
        precondition(!finalName.contains("/" as Character), "file names come from FileNamePattern, which rejects '/'")
        self.directory = directory
        self.finalName = finalName
        var opened: Int32 = -1
        var path = ""
        for _ in 0..<16 {
            let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
            path = directory + "/.evcapture-" + suffix + ".part"
            opened = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if opened >= 0 || errno != EEXIST { break }
        }
        guard opened >= 0 else { throw FileWriteError(errno: errno, context: "creating a file in \(directory)") }
        fd = opened
        temporaryPath = path
    }

    deinit { abandon() }

    /// `mkdir -p`: makes `path` and its missing parents (mode 0755, less the umask). The
    /// daemon uses it for the default output directory only: a configured one that is
    /// missing (an unmounted card) stays an error rather than filling the root file system.
    public static func makeDirectory(_ path: String) throws(FileWriteError) {
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

    /// Appends all of `bytes` (retrying short writes and EINTR).
    public func write(_ bytes: [UInt8]) throws(FileWriteError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FileWriteError(errno: errno, context: "writing \(temporaryPath)")
            }
            done += n
        }
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
        let (stem, ext) = Self.split(finalName)
        for attempt in 0..<1000 {
            let name = attempt == 0 ? finalName : "\(stem)-\(attempt)\(ext)"
            let target = directory + "/" + name
            switch Self.renameNoReplace(temporaryPath, target) {
            case 0:
                finished = true
                syncDirectory()
                return target
            case EEXIST:
                continue
            case let e:
                throw FileWriteError(errno: e, context: "renaming \(temporaryPath) to \(target)")
            }
        }
        throw FileWriteError(errno: EEXIST, context: "no free name for \(finalName) in \(directory)")
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
