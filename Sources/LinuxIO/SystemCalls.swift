#if canImport(Glibc)
import Glibc
#endif

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
