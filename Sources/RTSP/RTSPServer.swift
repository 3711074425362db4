import CGstRTSP
import Dispatch
import LinuxIO
import LiveH264
import Logging
import Synchronization

/// The `[rtsp]` table: where the RTSP server listens and who may watch
/// (docs/live-view.md#rtsp). Without the table there is no server and GStreamer is never loaded.
public struct RTSPSettings: Sendable, Hashable {
    public static let defaultPort = 8554
    /// The one stream's path: `rtsp://HOST:8554/live`.
    public static let path = "/live"

    /// An IP literal; loopback by default.
    public var host = "127.0.0.1"
    public var port = RTSPSettings.defaultPort
    /// RTSP Basic credentials (the live view's); required for a non-loopback `host`.
    public var username: String?
    public var password: String?

    public init() {}

    /// `rtsp://host:port/live` as a client on another machine would write it; `hostName`
    /// stands for an address that means every address (`0.0.0.0`, `::`).
    public func url(hostName: String) -> String {
        let h = host == "0.0.0.0" || host == "::" ? hostName : host.contains(":") ? "[\(host)]" : host
        return "rtsp://\(h):\(port)\(Self.path)"
    }
}

public struct RTSPError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

/// The camera's live H.264 over RTSP (RTP over UDP, or interleaved in the RTSP connection
/// over TCP), served by Debian's gst-rtsp-server, loaded with dlopen when the server starts
/// (Sources/CGstRTSP). Each client has a pipeline of its own fed by its own consumer of the
/// shared ``LiveH264Stream`` (a thread per client): it starts at a keyframe, and again at
/// each PLAY; a client that does not keep up loses frames alone.
public final class RTSPServer: Sendable {
    public let settings: RTSPSettings
    let stream: LiveH264Stream
    let logger: Logger
    /// rtsp.c's server: its loop runs on the server's thread; quit and free are called by
    /// ``stop()``, the quit from any thread (GLib's main loops allow it), the free after the
    /// loop returned.
    private struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
    }
    private struct State {
        var server: Handle?
        var stopping = false
        var clients = 0
    }
    private let state = Mutex(State())
    /// Signalled when the server's loop returned.
    private let finished = DispatchSemaphore(value: 0)

    public init(settings: RTSPSettings, stream: LiveH264Stream, logger: Logger) {
        self.settings = settings
        self.stream = stream
        self.logger = logger
    }

    /// Clients whose pipelines are being fed now.
    public var clients: Int { state.withLock { $0.clients } }

    /// Loads GStreamer, binds the port and serves on a thread of its own. Throws when
    /// GStreamer or its RTSP server is missing, or the port cannot be bound. Its first load
    /// on a machine reads every GStreamer plugin (seconds on a small board; GStreamer keeps a
    /// registry in `$XDG_CACHE_HOME` when it can): call it off the start-up path.
    public func start() throws(RTSPError) {
        var error = [CChar](repeating: 0, count: 512)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let server = evc_rtsp_create(
            settings.host, Int32(settings.port), RTSPSettings.path, settings.username, settings.password,
            { context, media in
                guard let context, let media else { return }
                Unmanaged<RTSPServer>.fromOpaque(context).takeUnretainedValue().feed(media)
            }, context, &error, error.count)
        guard let server else {
            throw RTSPError(
                "rtsp: \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        let handle = Handle(pointer: server)
        let stopped = state.withLock { s -> Bool in
            if !s.stopping { s.server = handle }
            return s.stopping
        }
        // Stopped while GStreamer loaded (a daemon stopped just after it started).
        if stopped {
            evc_rtsp_free(server)
            return
        }
        startThread(name: "evc-rtsp") { [finished] in
            // The server's main loop: RTSP requests and the clients' pipelines' signals.
            evc_rtsp_run(handle.pointer)
            finished.signal()
        }
        logger.info(
            "RTSP on rtsp://\(settings.host.contains(":") ? "[\(settings.host)]" : settings.host):\(settings.port)\(RTSPSettings.path)")
    }

    /// Ends the server: its loop, then every client's feeder (within half a second).
    public func stop() {
        let server = state.withLock { s -> Handle? in
            s.stopping = true
            defer { s.server = nil }
            return s.server
        }
        guard let server else { return }
        evc_rtsp_quit(server.pointer)
        finished.wait()
        evc_rtsp_free(server.pointer)
    }

    /// A client's pipeline was made (on the server's thread): feed it from a consumer of
    /// its own until it is gone.
    private func feed(_ media: OpaquePointer) {
        // The handle is the feeder's until it releases it (rtsp.c counts its references).
        let media = Handle(pointer: media)
        state.withLock { $0.clients += 1 }
        startThread(name: "evc-rtsp-feed") { [self] in
            let media = media.pointer
            var consumer = stream.join()
            defer {
                consumer.leave()
                evc_rtsp_media_release(media)
                state.withLock { $0.clients -= 1 }
            }
            while evc_rtsp_media_closed(media) == 0, !state.withLock({ $0.stopping }) {
                // The pipeline started, or the client sent PLAY: from a keyframe again.
                if evc_rtsp_media_take_restart(media) != 0 { consumer = consumer.rejoin() }
                guard let frame = consumer.next(timeout: .milliseconds(500)) else { continue }
                let pushed = frame.bytes.withUnsafeBufferPointer { evc_rtsp_push(media, $0.baseAddress, $0.count) }
                if pushed < 0 { break }
            }
        }
    }
}
