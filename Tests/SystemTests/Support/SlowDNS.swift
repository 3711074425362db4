import Foundation
import LinuxIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A DNS server on 127.0.0.1:53 (UDP) in the guest that knows one name and answers every
/// query for it only after `delay`: an A record with 127.0.0.1 (AAAA: no records). It makes
/// a host-name lookup slow for real — glibc's resolver waits for it in getaddrinfo — and
/// records when each query came and each answer went (CLOCK_MONOTONIC, seconds).
final class SlowDNS: Sendable {
    let name: String
    let delay: Duration
    private let fd: Int32
    private let log = Mutex<(queries: [Double], answers: [Double])>(([], []))
    private let running = Atomic<Bool>(true)

    init(name: String, delay: Duration) throws {
        self.name = name
        self.delay = delay
        // Close-on-exec: a daemon another suite starts meanwhile must not inherit it.
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ProcessError(argv: ["socket"], problem: String(cString: strerror(errno))) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(53).bigEndian
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw ProcessError(argv: ["bind 127.0.0.1:53"], problem: String(cString: strerror(e)))
        }
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)  // so that stop() is noticed
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        startThread(name: "slow-dns") { [self] in serve() }
    }

    deinit { close(fd) }

    var queries: [Double] { log.withLock { $0.queries } }
    var answers: [Double] { log.withLock { $0.answers } }

    func stop() { running.store(false, ordering: .releasing) }

    private func serve() {
        while running.load(ordering: .acquiring) {
            var packet = [UInt8](repeating: 0, count: 512)
            var from = sockaddr_storage()
            var fromLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = packet.withUnsafeMutableBytes { p in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, p.baseAddress, p.count, 0, $0, &fromLength) }
                }
            }
            guard n > 12, let reply = answer(Array(packet[..<n])) else { continue }
            log.withLock { $0.queries.append(Self.now()) }
            let peer = from, peerLength = fromLength
            startThread(name: "slow-dns-reply") { [self] in
                usleep(UInt32(delay.components.seconds * 1_000_000 + delay.components.attoseconds / 1_000_000_000_000))
                log.withLock { $0.answers.append(Self.now()) }
                var to = peer
                _ = reply.withUnsafeBytes { r in
                    withUnsafePointer(to: &to) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, r.baseAddress, r.count, 0, $0, peerLength) }
                    }
                }
            }
        }
    }

    /// The reply to a query (RFC 1035: the header with QR set, the question copied, for A
    /// of our name one answer); nil for what is not a one-question query.
    private func answer(_ q: [UInt8]) -> [UInt8]? {
        guard q[4] == 0, q[5] == 1 else { return nil }
        var i = 12
        var labels: [String] = []
        while i < q.count, q[i] != 0 {
            let length = Int(q[i])
            guard length < 64, i + 1 + length < q.count else { return nil }
            labels.append(String(decoding: q[(i + 1)...(i + length)], as: UTF8.self))
            i += 1 + length
        }
        guard i + 5 <= q.count else { return nil }
        let type = UInt16(q[i + 1]) << 8 | UInt16(q[i + 2])
        let questionEnd = i + 5
        let ours = labels.joined(separator: ".").lowercased() == name.lowercased()
        let records: [UInt8] =
            ours && type == 1 ? [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1] : []
        let rcode: UInt8 = ours ? 0 : 3  // NXDOMAIN for any other name
        let header: [UInt8] = [q[0], q[1], 0x80 | (q[2] & 0x01), 0x80 | rcode, 0, 1, 0, records.isEmpty ? 0 : 1, 0, 0, 0, 0]
        return header + Array(q[12..<questionEnd]) + records
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
