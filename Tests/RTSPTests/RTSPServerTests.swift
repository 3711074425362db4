#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Vocabulary
import Foundation
import Frames
import LiveH264
import Logging
import Movie
import RTSP
import Synchronization
import Testing
import V4L2

/// The RTSP server end to end on this machine (docs/live-view.md#rtsp): a camera that
/// sends YUYV frames (a moving bar, made here at 30 fps), the shared H.264 stream, Debian's
/// gst-rtsp-server, and FFmpeg's own RTSP client reading frames that decode, over TCP and
/// UDP; wrong credentials refused. The lab repeats it with vivid behind the daemon
/// (Tests/SystemTests/RTSPSystemTests.swift).
@Suite(.serialized) struct RTSPServerTests {
    static let ffmpeg = "/usr/bin/ffmpeg"

    /// A camera of YUYV frames at 30 fps whose picture changes every frame.
    final class BarCamera: FrameStream {
        let format = StreamFormat(width: 320, height: 240, pixelFormat: .yuyv, bytesPerLine: 640, framesPerSecond: 30)
        var n: UInt32 = 0
        var next = monotonicNow()
        func withNextFrame(timeout: Duration, _ body: (BorrowedFrame) -> Void) throws(StreamingError) {
            let now = monotonicNow()
            if next > now { usleep(UInt32((next - now) / .microseconds(1))) }
            next = max(next, now) + .microseconds(33_333)
            n += 1
            var bytes = [UInt8](repeating: 128, count: 640 * 240)
            let bar = Int(n * 4) % 320
            for y in 0..<240 {
                for x in 0..<320 { bytes[y * 640 + x * 2] = abs(x - bar) < 16 ? 235 : UInt8(16 + (y % 200)) }
            }
            bytes.withUnsafeBytes {
                body(
                    BorrowedFrame(
                        bytes: $0, sequence: n, timestampMicroseconds: monotonicNow().microseconds,
                        timestampKind: FrameTimestampKind(isMonotonic: true, isStartOfExposure: false)))
            }
        }
        func close() {}
    }

    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Runs a program to its end (at most `timeout`); its status and stderr.
    static func run(_ argv: [String], timeout: Duration = .seconds(60)) throws -> (status: Int32, stderr: String) {
        let result = try runProgram(argv[0], Array(argv.dropFirst()), timeout: timeout)
        return (result.status, result.stderr)
    }

    /// A server on a free loopback port fed by a BarCamera through the shared stream.
    static func server(username: String? = nil, password: String? = nil) throws -> (RTSPServer, LiveH264Stream, FrameSource, Int) {
        let frames = FrameSource(
            settings: StreamSettings(devicePath: "bar-camera"), opener: FrameStreamOpener { _ in BarCamera() },
            logger: Logger(label: "test"))
        let stream = LiveH264Stream(
            source: .init(frames: { frames }, settings: H264Settings(), encoder: { EncoderChoice.current(H264Settings()) }),
            logger: Logger(label: "test"))
        var settings = RTSPSettings()
        settings.port = freePort()
        settings.username = username
        settings.password = password
        let server = RTSPServer(settings: settings, stream: stream, logger: Logger(label: "test"))
        try server.start()
        return (server, stream, frames, settings.port)
    }

    @Test(arguments: ["tcp", "udp"])
    func ffmpegReadsFramesThatDecode(_ transport: String) throws {
        let (server, stream, frames, port) = try Self.server()
        defer {
            server.stop()
            frames.stopAndWait()
        }
        // Nothing is encoded before a client comes.
        #expect(stream.fanOut.consumers == 0)
        let r = try Self.run([
            Self.ffmpeg, "-hide_banner", "-loglevel", "error", "-stats", "-rtsp_transport", transport, "-i",
            "rtsp://127.0.0.1:\(port)/live",
            "-frames:v", "30", "-f", "null", "-",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        // -stats' last line: frame=   30 (every frame decoded, none only received).
        let decoded = r.stderr.components(separatedBy: "frame=").last.flatMap {
            Int($0.prefix { $0 == " " || $0.isNumber }.trimmingCharacters(in: .whitespaces))
        }
        #expect(decoded == 30, "\(r.stderr)")
        #expect(!r.stderr.contains("non-existing PPS") && !r.stderr.contains("no frame!"), "\(r.stderr)")
        // The client left: its feeder ends and the encode stops.
        #expect(
            pollUntil(timeout: .seconds(10), every: .milliseconds(50)) { server.clients == 0 && stream.fanOut.consumers == 0 },
            "\(server.clients) clients, \(stream.fanOut.consumers) consumers")
    }

    @Test func wrongCredentialsAreRefused() throws {
        let (server, stream, frames, port) = try Self.server(username: "viewer", password: "correct horse")
        defer {
            server.stop()
            frames.stopAndWait()
        }
        for url in ["rtsp://127.0.0.1:\(port)/live", "rtsp://viewer:wrong-one@127.0.0.1:\(port)/live"] {
            let r = try Self.run([Self.ffmpeg, "-hide_banner", "-rtsp_transport", "tcp", "-i", url, "-frames:v", "1", "-f", "null", "-"])
            #expect(r.status != 0)
            #expect(r.stderr.contains("401 Unauthorized"), "\(url): \(r.stderr)")
        }
        #expect(stream.fanOut.consumers == 0, "a refused client starts no encode")
        let ok = try Self.run([
            Self.ffmpeg, "-hide_banner", "-loglevel", "error", "-rtsp_transport", "tcp", "-i",
            "rtsp://viewer:correct%20horse@127.0.0.1:\(port)/live",
            "-frames:v", "5", "-f", "null", "-",
        ])
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    /// Both of RTSP's schemes are offered (docs/live-view.md#rtsp): FFmpeg's client answers the
    /// Digest challenge (its request, logged at trace level, carries `Authorization: Digest`,
    /// never the password) and reads frames; a client that knows only Basic gets the stream's
    /// description with the right password and 401 with a wrong one.
    @Test func digestAndBasicAreBothAccepted() throws {
        let (server, _, frames, port) = try Self.server(username: "viewer", password: "correct horse")
        defer {
            server.stop()
            frames.stopAndWait()
        }
        let digest = try Self.run([
            Self.ffmpeg, "-hide_banner", "-loglevel", "trace", "-rtsp_transport", "tcp", "-i",
            "rtsp://viewer:correct%20horse@127.0.0.1:\(port)/live", "-frames:v", "3", "-f", "null", "-",
        ])
        #expect(digest.status == 0, "\(digest.stderr.suffix(3000))")
        #expect(digest.stderr.contains("Authorization: Digest "), "\(digest.stderr.prefix(6000))")
        #expect(!digest.stderr.contains("correct horse") && !digest.stderr.contains("Authorization: Basic"))

        func describe(_ authorization: String) throws -> String {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = UInt16(port).bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let connected = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(connected == 0)
            let request = Array(
                "DESCRIBE rtsp://127.0.0.1:\(port)/live RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\nAuthorization: Basic \(authorization)\r\n\r\n"
                    .utf8)
            #expect(request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) } == request.count)
            var answer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &answer, answer.count, 0)
            return String(decoding: answer.prefix(max(0, n)), as: UTF8.self)
        }
        let right = try describe(Data("viewer:correct horse".utf8).base64EncodedString())
        #expect(right.hasPrefix("RTSP/1.0 200 OK") && right.contains("m=video"), "\(right)")
        let wrong = try describe(Data("viewer:wrong one".utf8).base64EncodedString())
        #expect(wrong.hasPrefix("RTSP/1.0 401"), "\(wrong)")
        #expect(wrong.contains("Digest realm=") && wrong.contains("Basic realm="), "both schemes offered: \(wrong)")
    }

    /// A port already taken is a clear error, not a server that never answers.
    @Test func aTakenPortIsAnError() throws {
        let (server, _, frames, port) = try Self.server()
        defer {
            server.stop()
            frames.stopAndWait()
        }
        var settings = RTSPSettings()
        settings.port = port
        let second = RTSPServer(
            settings: settings,
            stream: LiveH264Stream(
                source: .init(frames: { nil }, settings: H264Settings(), encoder: { EncoderChoice.current(H264Settings()) }),
                logger: Logger(label: "test")), logger: Logger(label: "test"))
        #expect(throws: RTSPError.self) { try second.start() }
        do { try second.start() } catch { #expect("\(error)".contains("cannot listen on 127.0.0.1:\(port)"), "\(error)") }
    }

    /// The declarations rtsp.c, webrtc.c and gstloader.c make for GStreamer and GLib,
    /// compiled against their real headers (libgstrtspserver-1.0-dev,
    /// libgstreamer-plugins-bad1.0-dev): a prototype or constant that differs fails here.
    @Test(arguments: ["rtsp.c", "webrtc.c", "gstloader.c"]) func theShimMatchesGStreamersHeaders(_ file: String) throws {
        let root = Fixtures.repository
        let cflags = try Self.output([
            "/usr/bin/pkg-config", "--cflags", "gstreamer-rtsp-server-1.0", "gstreamer-app-1.0", "gstreamer-webrtc-1.0",
            "gstreamer-sdp-1.0",
        ])
        let r = try Self.run(
            [
                "/usr/bin/cc", "-fsyntax-only", "-Werror", "-DEVC_GST_WITH_HEADERS", "-DGST_USE_UNSTABLE_API", "-include",
                "gst/rtsp-server/rtsp-server.h", "-include", "gst/app/gstappsrc.h", "-include", "gst/webrtc/webrtc.h", "-include",
                "gst/sdp/sdp.h",
            ]
                + cflags.split(separator: " ").map(String.init) + [
                    "-I", root + "/Sources/CGstRTSP/include", root + "/Sources/CGstRTSP/" + file,
                ])
        #expect(r.status == 0, "\(r.stderr)")
    }

    struct CommandFailed: Error { var command: String }

    static func output(_ argv: [String]) throws -> String {
        let result = try runProgram(argv[0], Array(argv.dropFirst()))
        guard result.succeeded else { throw CommandFailed(command: argv.joined(separator: " ")) }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
