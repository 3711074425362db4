#if canImport(Glibc)
import Glibc
#endif

/// evcapture's one error shape (docs/architecture.md#errors-and-habits): what kind of failure
/// (``code``), the errno behind it (0 when there is none: a timeout, a format check, a library
/// that sets none) and what was being done (`opening /dev/input/event3`, `VIDIOC_STREAMON on
/// /dev/video0`). Each layer names its failures as codes (`EvdevError`, `StreamingError`,
/// `MovieError`, ... are this type under their layer's name) and errnos are classified in one
/// place, ``Code/init(errno:)``. The bare helpers below throw it without context; callers add it
/// with ``doing(_:)``.
///
/// `"VIDIOC_STREAMON on /dev/video0: busy (device or resource busy): another program is using the camera: ..."`
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// An extensible failure code: the kinds every layer shares are here, a layer adds its own
    /// (`extension SystemError.Code { static let noBandwidth = ... }`) with the hint a person
    /// can act on. Two codes are the same when their names are.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        /// What a person can do about it, when the failure has a usual cause.
        public let hint: String?
        public init(_ rawValue: String, hint: String? = nil) {
            self.rawValue = rawValue
            self.hint = hint
        }
        public var description: String { rawValue }
        public static func == (a: Code, b: Code) -> Bool { a.rawValue == b.rawValue }
        public func hash(into h: inout Hasher) { h.combine(rawValue) }

        /// EACCES, EPERM: udev rules, group membership, a read-only mount.
        public static let permissionDenied = Code("permission denied")
        /// ENOENT: the node, file or directory does not exist.
        public static let notFound = Code("not found")
        /// ENODEV, ENXIO: the device went away (unplugged, its driver unbound).
        public static let deviceRemoved = Code("device removed")
        /// EBUSY: another program holds it.
        public static let busy = Code("busy")
        /// ENOSPC, EDQUOT, EFBIG: the disk (or the quota, or the file size limit) is full.
        public static let noSpace = Code("no space left")
        /// Nothing came within the time allowed.
        public static let timedOut = Code("timed out")
        /// Anything else (see the errno).
        public static let failed = Code("failed")

        /// The device or file is gone (ENOENT on open, ENODEV/ENXIO later): unplugged, not an error of ours.
        public var isDeviceGone: Bool { self == .notFound || self == .deviceRemoved }

        /// The one errno classifier: the code an errno means wherever it came from. A layer
        /// that knows more (EACCES on a control set means read-only) maps the few errnos that
        /// differ for it and asks this for the rest.
        public init(errno e: Int32) {
            switch e {
            case EACCES, EPERM, EROFS: self = .permissionDenied
            case ENOENT: self = .notFound
            case ENODEV, ENXIO: self = .deviceRemoved
            case EBUSY: self = .busy
            case ENOSPC, EDQUOT, EFBIG: self = .noSpace
            case ETIMEDOUT: self = .timedOut
            default: self = .failed
            }
        }
    }

    public var code: Code
    /// The errno, 0 when there is none.
    public var errno: Int32
    public var context: String

    public init(code: Code, errno: Int32 = 0, context: String = "") {
        self.code = code
        self.errno = errno
        self.context = context
    }
    /// An errno, classified (``Code/init(errno:)``).
    public init(errno: Int32, context: String = "") {
        self.init(code: Code(errno: errno), errno: errno, context: context)
    }
    /// The same failure, saying what was being done.
    public func doing(_ context: String) -> SystemError { SystemError(code: code, errno: errno, context: context) }

    /// See ``Code/isDeviceGone``.
    public var isDeviceGone: Bool { code.isDeviceGone }

    /// The kernel's wording of the errno, lower-case (`device or resource busy`); empty without one.
    public var reason: String { errno == 0 ? "" : String(cString: strerror(errno)).lowercased() }

    /// `context: reason` when the code only restates the errno; `context: code (reason)` when
    /// the code says more; `context: code` without an errno; then the code's hint, if any.
    public var description: String {
        var what: String
        if errno != 0, code == Code(errno: errno) {
            what = reason
        } else if errno != 0 {
            what = "\(code) (\(reason))"
        } else {
            what = code == .failed && !context.isEmpty ? "" : code.rawValue
        }
        var s = context.isEmpty ? what : (what.isEmpty ? context : "\(context): \(what)")
        if let hint = code.hint { s += ": \(hint)" }
        return s
    }
}

/// Runs a system call, retrying while it fails with EINTR; any other failure throws its
/// errno. The one place EINTR is handled.
@inline(__always)
public func retryingEINTR<T: FixedWidthInteger>(_ call: () -> T) throws(SystemError) -> T {
    while true {
        let rc = call()
        if rc >= 0 { return rc }
        let e = errno
        if e != EINTR { throw SystemError(errno: e) }
    }
}

/// Like ``retryingEINTR(_:)`` for libevdev-style calls that return `-errno`.
@inline(__always)
public func retryingNegativeErrno(_ call: () -> Int32) -> Int32 {
    while true {
        let rc = call()
        if rc != -EINTR { return rc }
    }
}

/// Writes all of `bytes` to `fd`, retrying short writes and EINTR. A blocking fd blocks
/// until everything is written; EAGAIN on a non-blocking one throws like any other errno.
public func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) {
    var off = 0
    while off < bytes.count {
        let n = try retryingEINTR { Glibc.write(fd, bytes.baseAddress! + off, bytes.count - off) }
        if n == 0 { throw SystemError(errno: EIO) }
        off += n
    }
}

/// Writes all of `text` (UTF-8) to `fd`; see ``writeAll(_:_:)-(_,UnsafeRawBufferPointer)``.
public func writeAll(_ fd: Int32, _ text: String) throws(SystemError) {
    var text = text
    let result: Result<Void, SystemError> = text.withUTF8 { b in
        do throws(SystemError) {
            try writeAll(fd, UnsafeRawBufferPointer(b))
            return .success(())
        } catch {
            return .failure(error)
        }
    }
    try result.get()
}

/// Reads a whole file with plain syscalls (EINTR retried).
public func readWholeFile(_ path: String) throws(SystemError) -> String {
    String(decoding: try readFileBytes(path), as: UTF8.self)
}

/// A file's bytes, with plain syscalls (EINTR retried); at most `limit` + 1 of them, so that
/// a caller with a bound can tell a file past it (more than `limit` bytes came back) without
/// holding the rest.
public func readFileBytes(_ path: String, limit: Int = .max) throws(SystemError) -> [UInt8] {
    let fd = try retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while bytes.count <= limit {
        let n = try retryingEINTR { chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
        if n == 0 { break }
        let room = limit - bytes.count  // ≥ 0 here; room + 1 only when it is below n (no overflow)
        bytes.append(contentsOf: chunk[0..<(room >= n ? n : room + 1)])
    }
    return bytes
}

/// Writes `text` to stderr (fd 2), whole; a stderr that cannot be written is ignored.
public func writeStderr(_ text: String) {
    try? writeAll(2, text)
}

/// `s` with control characters (C0, DEL, C1, and so ESC) written as escapes (`\n`, `\u{1B}`)
/// and backslashes doubled, so text from a device or a file cannot move a terminal's cursor,
/// recolour it or forge a line when it is printed or logged.
public func escapingControlCharacters(_ s: String) -> String {
    // 0xC2 leads every scalar U+0080...U+00BF in UTF-8, C1 among them.
    guard s.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0x5C || $0 == 0xC2 }) else { return s }
    var out = ""
    for u in s.unicodeScalars {
        switch u.value {
        case 0x0A: out += "\\n"
        case 0x0D: out += "\\r"
        case 0x09: out += "\\t"
        case 0x5C: out += "\\\\"
        case 0..<0x20, 0x7F, 0x80..<0xA0: out += "\\u{\(String(u.value, radix: 16, uppercase: true))}"
        default: out.unicodeScalars.append(u)
        }
    }
    return out
}

/// A problem in a file a person wrote or recorded (a config, an evemu recording): which file,
/// which line, what is wrong. Printed as `file:line: problem`.
public struct FileLineError: Error, Hashable, Sendable, CustomStringConvertible {
    public var file: String
    /// 1-based; 0 when the problem is with the file as a whole (unreadable).
    public var line: Int
    public var problem: String

    public init(file: String, line: Int, problem: String) {
        self.file = file
        self.line = line
        self.problem = problem
    }

    /// `file:line: problem` (`file: problem` when no line applies).
    public var description: String { described() }

    /// `file:line: <prefix>problem`: the same place and wording for a warning.
    public func described(prefix: String = "") -> String {
        line > 0 ? "\(file):\(line): \(prefix)\(problem)" : "\(file): \(prefix)\(problem)"
    }
}
