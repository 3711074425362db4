import EvcaptureTesting
import Foundation
import LinuxIO
import Synchronization
import Testing
@testable import Output
import Capture
import Evdev
import Actions


/// A test client that reads everything on a thread of its own.
final class LineReader: Sendable {
    let fd: Int32
    private let received = Mutex<[UInt8]>([])
    private let eof = Atomic<Bool>(false)
    private let newlines = Atomic<Int>(0)

    init(path: String) throws {
        fd = try SocketServer.connect(to: path)
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                received.withLock { $0.append(contentsOf: buffer[0..<n]) }
                newlines.add(buffer[0..<n].count { $0 == 10 }, ordering: .relaxed)
            }
            eof.store(true, ordering: .releasing)
        }
        thread.start()
    }
    deinit { close(fd) }

    var lines: [String] { received.withLock { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init) }
    var lineCount: Int { newlines.load(ordering: .relaxed) }
    var sawEOF: Bool { eof.load(ordering: .acquiring) }
}

@Suite(.serialized) struct SocketServerTests {
    @Test func socketFileHasMode0660() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        let server = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: testLogger)
        var st = stat()
        #expect(lstat("\(dir)/s.sock", &st) == 0)
        #expect(st.st_mode & S_IFMT == S_IFSOCK)
        #expect(st.st_mode & 0o777 == 0o660)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["s.sock"], "no temporary name left")
        server.stop()
        #expect(lstat("\(dir)/s.sock", &st) != 0, "removed on stop")
    }

    @Test func refusesToReplaceARegularFile() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        try "precious".write(toFile: "\(dir)/s.sock", atomically: false, encoding: .utf8)
        #expect {
            _ = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: testLogger)
        } throws: { error in
            (error as? SocketServerError)?.code == .notASocket && "\(error)".contains("\(dir)/s.sock") && "\(error)".contains("refusing")
        }
        #expect(try String(contentsOfFile: "\(dir)/s.sock", encoding: .utf8) == "precious")
    }

    @Test func replacesAStaleSocketButNotALiveOne() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        // A stale socket: bound, then its owner went away without unlinking.
        let first = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: testLogger)
        #expect {
            _ = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: testLogger)
        } throws: { ($0 as? SocketServerError)?.code == .inUse }
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array("\(dir)/t.sock".utf8) + [0]) }
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        close(stale)
        let second = try SocketServer(path: "\(dir)/t.sock", loop: loop, logger: testLogger)
        let client = try LineReader(path: "\(dir)/t.sock")
        _ = client
        first.stop()
        second.stop()
    }

    @Test func broadcastReachesEveryClient() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        let server = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: testLogger)
        defer { server.stop() }
        let a = try LineReader(path: "\(dir)/s.sock")
        let b = try LineReader(path: "\(dir)/s.sock")
        #expect(await eventually { server.clientCount == 2 })
        server.broadcast(#"{"event":"capture","phase":"began","press":1}"#)
        server.broadcast(bytes: Array(#"{"event":"capture","phase":"ended","press":1}"#.utf8) + [10])
        #expect(await eventually { a.lineCount == 2 && b.lineCount == 2 })
        #expect(a.lines == [#"{"event":"capture","phase":"began","press":1}"#, #"{"event":"capture","phase":"ended","press":1}"#])
        #expect(b.lines == a.lines)
        server.stop()
        #expect(await eventually { a.sawEOF && b.sawEOF }, "clients see the end when the server stops")
    }

    @Test func aClientThatStopsReadingIsDroppedWhileAnotherKeepsReceiving() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        let server = try SocketServer(path: "\(dir)/s.sock", loop: loop, maxPending: 64 * 1024, logger: testLogger)
        defer { server.stop() }
        let stuck = try SocketServer.connect(to: "\(dir)/s.sock")  // never read
        defer { close(stuck) }
        let reader = try LineReader(path: "\(dir)/s.sock")
        #expect(await eventually { server.clientCount == 2 })

        let payload = String(repeating: "x", count: 1000)
        let total = 2000  // 2 MB: far beyond the kernel's socket buffer plus 64 KiB pending
        for i in 0..<total {
            let start = ContinuousClock.now
            server.broadcast(#"{"event":"control","n":\#(i),"pad":"\#(payload)"}"#)
            #expect(ContinuousClock.now - start < .milliseconds(500), "broadcast never blocks")
            if i % 50 == 49 {
                // Let the reading client keep up; the stuck one cannot.
                #expect(await eventually { reader.lineCount == i + 1 })
            }
        }
        #expect(await eventually { reader.lineCount == total })
        #expect(server.clientCount == 1, "the stuck client was dropped")
        let lines = reader.lines
        #expect(lines.count == total)
        #expect(lines.last?.hasPrefix(#"{"event":"control","n":\#(total - 1),"#) == true)
        // The stuck client's connection is closed: draining it ends in EOF.
        var buffer = [UInt8](repeating: 0, count: 65536)
        var drained = 0
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(stuck, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let n = buffer.withUnsafeMutableBytes { read(stuck, $0.baseAddress, $0.count) }
            if n <= 0 {
                #expect(n == 0, "EOF, not a timeout")
                break
            }
            drained += n
        }
        #expect(drained > 0 && drained < total * 1000)
    }
}
