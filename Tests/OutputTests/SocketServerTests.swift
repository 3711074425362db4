import EvcaptureTesting
import Foundation
import LinuxIO
import Synchronization
import Testing
import Logging
@testable import Output

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
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir)) == ["s.sock", "s.sock.lock"], "no temporary name left")
        server.stop()
        #expect(lstat("\(dir)/s.sock", &st) != 0, "removed on stop")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == [], "the lock file too")
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
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
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

    /// A broadcast never blocks on the client that stopped reading: were one to block, it
    /// would never return and the time limit would end the test.
    @Test(.timeLimit(.minutes(1))) func aClientThatStopsReadingIsDroppedWhileAnotherKeepsReceiving() async throws {
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
            server.broadcast(#"{"event":"control","n":\#(i),"pad":"\#(payload)"}"#)
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

/// Log lines, for tests that check what the server said.
final class RecordingLogHandler: LogHandler, Sendable {
    private let recorded = Mutex<[String]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    func log(event: LogEvent) {
        recorded.withLock { $0.append("\(event.level): \(event.message)") }
    }
    var lines: [String] { recorded.withLock { $0 } }
}

/// The socket is one-way and bounded (docs/json-lines.md#the-socket).
@Suite(.serialized) struct SocketServerBoundsTests {
    static func recordingLogger() -> (Logger, RecordingLogHandler) {
        let handler = RecordingLogHandler()
        return (Logger(label: "socket.test", factory: { _ in handler }), handler)
    }

    @Test(.timeLimit(.minutes(1))) func aClientThatSendsIsDroppedAfterOneBoundedRead() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        let (logger, log) = Self.recordingLogger()
        let server = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: logger)
        defer { server.stop() }
        let reader = try LineReader(path: "\(dir)/s.sock")
        let talker = try SocketServer.connect(to: "\(dir)/s.sock")
        defer { close(talker) }
        #expect(await eventually { server.clientCount == 2 })

        // Writes until the server hangs up (EPIPE/ECONNRESET) or 64 MiB went in.
        let written = Atomic<Int>(0)
        let writer = Thread {
            var chunk = [UInt8](repeating: 0x61, count: 65536)
            while written.load(ordering: .relaxed) < 64 << 20 {
                let n = chunk.withUnsafeMutableBytes { send(talker, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                written.add(n, ordering: .relaxed)
            }
        }
        writer.start()
        #expect(await eventually { server.clientCount == 1 }, "the client that sent data was dropped")
        #expect(await eventually { written.load(ordering: .relaxed) < 64 << 20 && !writer.isExecuting })
        #expect(
            written.load(ordering: .relaxed) < 8 << 20,
            "the server stopped reading at once (wrote \(written.load(ordering: .relaxed)) bytes)")
        #expect(log.lines.contains { $0.contains("it sent data") }, "\(log.lines)")
        server.broadcast(#"{"event":"capture","press":1}"#)
        #expect(await eventually { reader.lineCount == 1 }, "the reading client is not affected")
    }

    @Test(.timeLimit(.minutes(1))) func aHalfClosedReaderStillReceivesLines() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        let server = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: testLogger)
        defer { server.stop() }
        // `socat - UNIX-CONNECT:PATH </dev/null`: stdin's end shuts down socat's writing side.
        let reader = try LineReader(path: "\(dir)/s.sock")
        #expect(shutdown(reader.fd, Int32(SHUT_WR)) == 0)
        #expect(await eventually { server.clientCount == 1 })
        try await Task.sleep(for: .milliseconds(100))  // the server sees the EOF (EPOLLRDHUP)
        server.broadcast(#"{"event":"capture","press":1}"#)
        server.broadcast(#"{"event":"capture","press":2}"#)
        #expect(await eventually { reader.lineCount == 2 })
        #expect(server.clientCount == 1)
        #expect(!reader.sawEOF)
    }

    @Test(.timeLimit(.minutes(1))) func clientsPastTheLimitAreToldAndClosed() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        let (logger, log) = Self.recordingLogger()
        let server = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: logger)
        defer { server.stop() }
        #expect(server.maxClients == 16)
        var readers: [LineReader] = []
        for _ in 0..<16 { readers.append(try LineReader(path: "\(dir)/s.sock")) }
        #expect(await eventually { server.clientCount == 16 })
        let extra = (0..<4).compactMap { _ in try? LineReader(path: "\(dir)/s.sock") }
        #expect(extra.count == 4, "connecting works; the server closes them")
        #expect(await eventually { extra.allSatisfy(\.sawEOF) })
        for r in extra { #expect(r.lines == [#"{"event":"error","message":"too many clients","code":"socket-full"}"#]) }
        #expect(server.clientCount == 16)
        let refusals = log.lines.filter { $0.contains("socket client refused: 16 clients connected (the limit)") }
        #expect(refusals.count == 1, "one line for a burst: \(log.lines)")
        server.broadcast(#"{"event":"capture","press":1}"#)
        #expect(await eventually { readers.allSatisfy { $0.lineCount == 1 } })
        // A place freed is a place taken.
        shutdown(readers.removeLast().fd, Int32(SHUT_RDWR))  // as when its process ends
        #expect(await eventually { server.clientCount == 15 })
        let late = try LineReader(path: "\(dir)/s.sock")
        #expect(await eventually { server.clientCount == 16 })
        #expect(!late.sawEOF)
    }

    @Test(.timeLimit(.minutes(1))) func aLiveServerWithAFullBacklogIsInUseNotStale() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        // Someone else's server that never accepts: its backlog fills.
        let busy = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(busy) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array("\(dir)/s.sock".utf8) + [0]) }
        let size = socklen_t(MemoryLayout<sockaddr_un>.size)
        #expect(withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(busy, $0, size) } } == 0)
        #expect(listen(busy, 0) == 0)
        var pending: [Int32] = []
        defer { pending.forEach { close($0) } }
        while pending.count < 64 {
            let c = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, size) } }
            let e = errno
            pending.append(c)
            if rc != 0 && e == EAGAIN { break }
        }
        #expect(SocketServer.probe("\(dir)/s.sock") == EAGAIN, "the backlog is full")
        #expect {
            _ = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: testLogger)
        } throws: { ($0 as? SocketServerError)?.code == .inUse }
        var st = stat()
        #expect(lstat("\(dir)/s.sock", &st) == 0, "the live socket is left alone")
    }

    @Test(.timeLimit(.minutes(1))) func twoServersStartedTogetherCannotShareAPath() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        for round in 0..<40 {
            let path = "\(dir)/s\(round).sock"
            let started = Mutex<[SocketServer]>([])
            let errors = Mutex<[SocketServerError.Code]>([])
            let ready = Atomic<Int>(0)
            let threads = (0..<2).map { _ in
                Thread {
                    ready.add(1, ordering: .relaxed)
                    while ready.load(ordering: .relaxed) < 2 {}
                    do throws(SocketServerError) {
                        let s = try SocketServer(path: path, loop: loop, logger: testLogger)
                        started.withLock { $0.append(s) }
                    } catch {
                        errors.withLock { $0.append(error.code) }
                    }
                }
            }
            threads.forEach { $0.start() }
            _ = pollUntil(every: .milliseconds(1)) { started.withLock { $0.count } + errors.withLock { $0.count } >= 2 }
            #expect(started.withLock { $0.count } == 1, "round \(round): exactly one server")
            #expect(errors.withLock { $0 } == [.inUse], "round \(round)")
            let client = try LineReader(path: path)
            #expect(pollUntil { started.withLock { $0.first?.clientCount } == 1 }, "the one server is the one at the path")
            started.withLock { $0.first?.broadcast("x") }
            #expect(pollUntil { client.lineCount == 1 })
            started.withLock { $0.forEach { $0.stop() } }
        }
    }
}
