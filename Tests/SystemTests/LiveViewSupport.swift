#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Foundation
import Testing

/// HTTP for the live view's system tests: curl (an independent client) for requests, and
/// raw sockets for clients that misbehave on purpose.
enum LiveViewClient {
    static let curl = ["/usr/bin/curl", "/usr/local/bin/curl"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Runs curl with `arguments`; a body goes to `output` (else discarded); returns the
    /// status code (0 when nothing came back) and curl's result.
    @discardableResult
    static func request(_ arguments: [String], output: String = "/dev/null", timeout: Duration = .seconds(30)) throws -> (
        status: Int, result: ProgramResult
    ) {
        let curl = try #require(curl)
        let r = try run([curl, "-sS", "-o", output, "-w", "%{http_code}"] + arguments, timeout: timeout)
        return (Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, r)
    }

    /// The parts of a multipart/x-mixed-replace body as received (the last one may be cut off
    /// by the end of the download; it is left out).
    static func parts(_ bytes: [UInt8], boundary: String = "evcaptureframe") -> [(headers: [String: String], body: [UInt8])] {
        var parts: [(headers: [String: String], body: [UInt8])] = []
        let marker = Array("--\(boundary)\r\n".utf8)
        var i = 0
        while let start = find(marker, in: bytes, from: i) {
            var headers: [String: String] = [:]
            var p = start + marker.count
            while let eol = find(Array("\r\n".utf8), in: bytes, from: p) {
                if eol == p {
                    p += 2
                    break
                }
                let line = String(decoding: bytes[p..<eol], as: UTF8.self)
                if let colon = line.firstIndex(of: ":") {
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                p = eol + 2
            }
            guard let length = headers["content-length"].flatMap(Int.init), p + length <= bytes.count else { break }
            parts.append((headers, Array(bytes[p..<(p + length)])))
            i = p + length
        }
        return parts
    }

    private static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard needle.count <= hay.count else { return nil }
        var i = from
        while i + needle.count <= hay.count {
            if hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }

    /// A TCP connection to 127.0.0.1:`port` with a tiny receive buffer (a phone on a bad
    /// link), from the loopback address `source` (127.0.0.N: another machine, as the server
    /// counts them); `request` is sent, nothing is ever read.
    static func slowClient(port: Int, request: String?, from source: String? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var size: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw POSIXError(.init(rawValue: errno) ?? .EIO)
            }
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        if let request { _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }
        return fd
    }

    /// Whether the server closed `fd` within `timeout` (reads and drops what came before).
    static func closedByServer(_ fd: Int32, within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 200) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return true }
        }
        return false
    }

    /// Reads from `fd` until `enough` says the bytes so far suffice, the server closes it or
    /// `timeout` passes; returns what came.
    static func readUntil(_ fd: Int32, within timeout: Duration, _ enough: ([UInt8]) -> Bool) -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while !enough(got), ContinuousClock.now < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 200) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            got += buffer[0..<n]
        }
        return got
    }

    /// Sends `bytes` without blocking until the socket takes no more (or all went); returns
    /// how many it took.
    static func sendUntilFull(_ fd: Int32, _ bytes: [UInt8], within timeout: Duration) -> Int {
        var sent = 0
        let deadline = ContinuousClock.now + timeout
        while sent < bytes.count, ContinuousClock.now < deadline {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n > 0 {
                sent += n
            } else if n < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 200)
            } else {
                break
            }
        }
        return sent
    }

    /// The process's private memory in KB (`Private_Clean` + `Private_Dirty` of
    /// /proc/PID/smaps_rollup): what it costs the machine.
    static func privateKB(_ pid: pid_t) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) else { return 0 }
        return text.split(separator: "\n").filter { $0.hasPrefix("Private_") }.reduce(0) { sum, line in
            sum + (line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) } ?? 0)
        }
    }

    /// TCP connections of the server on `port` that it has not closed (ESTABLISHED or
    /// CLOSE-WAIT on its side), as `ss` shows them.
    static func serverConnections(port: Int) -> Int {
        guard let r = try? run(["/usr/bin/ss", "-Htn", "state", "established", "state", "close-wait", "sport", "= :\(port)"]) else {
            return -1
        }
        return r.stdout.split(separator: "\n").count
    }
}
