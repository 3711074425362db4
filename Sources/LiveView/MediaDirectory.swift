#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import Output
import Synchronization
import Vocabulary

/// The output directory as the live view shows it: photos and videos by plain name, never
/// a path. A name cannot leave the directory (no `/`, no `..`), hidden files (unfinished
/// `.part` files) are not shown, and only regular files are opened — a symlink is refused
/// by the kernel (`O_NOFOLLOW`), wherever it points. Only photos and videos (the
/// extensions the daemon writes) are listed or served, by the same rule for both.
struct MediaDirectory: Sendable {
    public let path: String
    private let cache = ListingCache()
    public init(path: String) { self.path = path }

    /// The last listing, and the directory's change time it was made at.
    private final class ListingCache: Sendable {
        let state = Mutex<(changed: timespec, json: ByteBuffer)?>(nil)
    }

    public struct Entry: Sendable, Hashable {
        public var name: String
        public var bytes: Int
        /// Seconds since 1970.
        public var modified: Int
        public var kind: String
    }

    /// A name that names a file in the directory itself: not empty, no `/`, no control
    /// characters (NUL, CR, LF…, which no header could carry), not hidden (so neither `.`
    /// nor `..`), not absurdly long. (A name that is not UTF-8 never becomes a `String`:
    /// it is neither listed nor served.)
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && !name.hasPrefix(".") && !name.utf8.contains(UInt8(ascii: "/"))
            && !name.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// `Content-Disposition` for a served file: a plain ASCII `filename` (other bytes as
    /// `_`) and the exact name percent-encoded in `filename*` (RFC 6266).
    static func contentDisposition(_ name: String) -> String {
        let ascii = String(
            decoding: name.utf8.map {
                $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") ? $0 : UInt8(ascii: "_")
            },
            as: UTF8.self)
        var encoded = ""
        for b in name.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                encoded.unicodeScalars.append(UnicodeScalar(b))
            default:
                encoded += "%" + String(b, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        return "inline; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

    static func kind(of name: String) -> String? {
        let lower = name.lowercased()
        if lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") { return "photo" }
        if lower.hasSuffix(".mp4") || lower.hasSuffix(".avi") { return "video" }
        return nil
    }

    static func contentType(of name: String) -> String {
        let lower = name.lowercased()
        return switch kind(of: name) {
        case "photo": "image/jpeg"
        case "video" where lower.hasSuffix(".mp4"): "video/mp4"
        case "video": "video/x-msvideo"
        default: "application/octet-stream"
        }
    }

    /// Photos and videos, newest first: regular files only (symlinks, directories and
    /// hidden files are left out).
    public func list(limit: Int = 500) -> [Entry] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        let dfd = dirfd(dir)
        var entries: [Entry] = []
        while let e = readdir(dir) {
            let bytes = withUnsafeBytes(of: e.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            guard let name = String(validating: bytes, as: UTF8.self), Self.isPlainName(name), let kind = Self.kind(of: name) else {
                continue
            }
            var st = stat()
            guard fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            entries.append(Entry(name: name, bytes: Int(st.st_size), modified: Int(st.st_mtim.tv_sec), kind: kind))
        }
        entries.sort { ($0.modified, $0.name) > ($1.modified, $1.name) }
        return Array(entries.prefix(limit))
    }

    /// Opens a regular file of the directory for reading; nil when there is none by that
    /// name (or it is a symlink, a directory, a device).
    public func open(_ name: String) -> (fd: Int32, bytes: Int)? {
        guard Self.isPlainName(name), Self.kind(of: name) != nil else { return nil }
        let dfd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { return nil }
        defer { close(dfd) }
        let fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return nil
        }
        return (fd, Int(st.st_size))
    }

    /// ``json(_:)`` of ``list(limit:)``, made again only when the directory changed: a
    /// listing of thousands of files costs tens of milliseconds of the server's only thread.
    /// The daemon writes each file under a hidden name and renames it when done, which
    /// changes the directory; a listing made in the same clock tick as a change is not kept.
    func listing() -> ByteBuffer {
        var st = stat()
        guard stat(path, &st) == 0 else { return ByteBuffer(string: Self.json([])) }
        let changed = st.st_mtim
        if let cached = cache.state.withLock({ $0 }), cached.changed.tv_sec == changed.tv_sec, cached.changed.tv_nsec == changed.tv_nsec {
            return cached.json
        }
        let json = ByteBuffer(string: Self.json(list()))
        if Self.keepsListing(changedAt: changed.tv_sec, now: wallClockNow()) { cache.state.withLock { $0 = (changed, json) } }
        return json
    }

    /// Whether a listing made at `now` (seconds since 1970, the floor's wall clock) of a
    /// directory last changed at `changedAt` (its mtime's seconds) is kept: only once the change
    /// is more than a whole second behind the listing, as a change within the same second (or
    /// the next, a file system's coarser ticks) could share its time stamp.
    static func keepsListing(changedAt: Int, now: Double) -> Bool { Int(now.rounded(.down)) > changedAt + 1 }

    /// The listing as JSON: `{"files":[{"name":…,"kind":"photo","bytes":…,"modified":…}]}`.
    public static func json(_ entries: [Entry]) -> String {
        JSONValue.object([
            (
                "files",
                .array(
                    entries.map { e in
                        .object([
                            ("name", .string(e.name)), ("kind", .string(e.kind)), ("bytes", .int(Int64(e.bytes))),
                            ("modified", .int(Int64(e.modified))),
                        ])
                    })
            )
        ]).encoded
    }
}

extension String {
    fileprivate func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}
