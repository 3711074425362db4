#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing

/// RTSP in the VM (docs/live-view.md#rtsp): the daemon on vivid with `[rtsp]` and the live
/// view's credentials; FFmpeg's own RTSP client (ffprobe and ffmpeg, from Debian) reads the
/// stream over TCP and over UDP, and every frame it asked for decodes; a client without the
/// credentials, or with wrong ones, gets 401 and starts no encode.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct RTSPSystemTests {
    static let ffmpeg = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: vividNode() != nil, "needs vivid"))
    func ffmpegReadsTheLiveH264OverTCPAndUDP() throws {
        let ffmpeg = try #require(Self.ffmpeg, "needs ffmpeg (apt-get install ffmpeg)")
        let ffprobe = try #require(daemonFFprobe, "needs ffprobe (apt-get install ffmpeg)")
        let port = try MosquittoBroker.freePort()
        let httpPort = try MosquittoBroker.freePort()
        let scratch = try DaemonScratch("rtsp")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"
            capture-device = "\(try #require(vividNode()))"
            width = 640
            height = 480

            [output]
            directory = "\(scratch.output)"

            [http]
            listen = "127.0.0.1:\(httpPort)"
            username = "viewer"
            password = "correct horse"

            [rtsp]
            listen = "127.0.0.1:\(port)"
            """)
        let daemon = try DaemonProcess("rtsp", arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.session("started")) != nil, "\(daemon.transcript)")
        let url = "rtsp://viewer:correct%20horse@127.0.0.1:\(port)/live"
        // GStreamer loads on a thread of its own after start-up (its first load reads every
        // plugin: slow under emulation); the daemon says when RTSP listens.
        try #require(
            pollUntil(timeout: .seconds(180)) { daemon.stderr.contains("RTSP on rtsp://127.0.0.1:\(port)/live") },
            "\(daemon.transcript)")

        // What the stream is: H.264 at the camera's size.
        let probe = try run(
            [ffprobe, "-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", url],
            timeout: .seconds(90))
        #expect(probe.succeeded, "\(probe)\n\(daemon.transcript)")
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,640,480", "\(probe)")

        for transport in ["tcp", "udp"] {
            let r = try run(
                [
                    ffmpeg, "-hide_banner", "-loglevel", "error", "-stats", "-rtsp_transport", transport, "-i", url, "-frames:v", "20",
                    "-f", "null", "-",
                ], timeout: .seconds(120))
            #expect(r.succeeded, "\(transport): \(r)\n\(daemon.transcript)")
            // -stats' last count: every frame asked for was decoded.
            let decoded = r.stderr.components(separatedBy: "frame=").last.flatMap {
                Int($0.prefix { $0 == " " || $0.isNumber }.trimmingCharacters(in: .whitespaces))
            }
            #expect(decoded == 20, "\(transport): \(r.stderr)")
            #expect(!r.stderr.contains("non-existing PPS") && !r.stderr.contains("no frame!"), "\(transport): \(r.stderr)")
        }

        for wrong in ["rtsp://127.0.0.1:\(port)/live", "rtsp://viewer:wrong-password@127.0.0.1:\(port)/live"] {
            let r = try run([ffprobe, "-v", "error", "-rtsp_transport", "tcp", wrong], timeout: .seconds(60))
            #expect(!r.succeeded)
            #expect(r.stderr.contains("401 Unauthorized"), "\(wrong): \(r)")
        }
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }
}
