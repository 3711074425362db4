#if canImport(Glibc)
import Glibc
#endif
import Output

/// The output directory as the live view shows it: photos and videos by plain name, never
/// a path. A name cannot leave the directory (no `/`, no `..`), hidden files (unfinished
/// `.part` files) are not shown, and only regular files are opened — a symlink is refused
/// by the kernel (`O_NOFOLLOW`), wherever it points.
public struct MediaDirectory: Sendable {
    public let path: String
    public init(path: String) { self.path = path }

    public struct Entry: Sendable, Hashable {
        public var name: String
        public var bytes: Int
        /// Seconds since 1970.
        public var modified: Int
        public var kind: String
    }

    /// A name that names a file in the directory itself: not empty, no `/` or NUL, not
    /// hidden (so neither `.` nor `..`), not absurdly long.
    public static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && !name.hasPrefix(".") && !name.utf8.contains(UInt8(ascii: "/"))
            && !name.utf8.contains(0)
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
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard Self.isPlainName(name), let kind = Self.kind(of: name) else { continue }
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
        guard Self.isPlainName(name) else { return nil }
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
