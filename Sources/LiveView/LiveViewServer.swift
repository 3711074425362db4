import Vocabulary
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Output
import Synchronization
import Frames
import LinuxIO

/// What the live view needs from the daemon.
public struct LiveViewHooks: Sendable {
    /// The capture stream now (nil without a camera); it may change when a camera comes.
    public var frames: @Sendable () -> FrameSource?
    /// A request from the page, to take the path a button or knob takes.
    public var input: @Sendable (LiveViewInput) -> Void
    /// The camera's own small stream for the live view, while the capture stream has one
    /// (a libcamera camera's, docs/libcamera.md#two-streams); else the stream's frames are used.
    public var viewfinder: ViewfinderFrames?
    /// WebRTC viewers (`/api/whep`); without it the endpoint answers 404 and the page shows MJPEG.
    public var whep: (any WHEPService)?
    public init(
        frames: @escaping @Sendable () -> FrameSource?, viewfinder: ViewfinderFrames? = nil, whep: (any WHEPService)? = nil,
        input: @escaping @Sendable (LiveViewInput) -> Void
    ) {
        self.frames = frames
        self.viewfinder = viewfinder
        self.whep = whep
        self.input = input
    }
}

/// What every connection shares (immutable, apart from the loop-bound hub).
final class ServerCore: Sendable {
    let settings: LiveViewSettings
    let hub: Hub
    let media: MediaDirectory
    let input: @Sendable (LiveViewInput) -> Void
    /// WebRTC viewers, when the daemon offers them.
    let whep: (any WHEPService)?
    let page: ByteBuffer
    let partTrailer: ByteBuffer
    let snapshotQuality: Int
    /// The connection slots and what is remembered of peers (loop-bound, as the hub).
    let gatekeeper: Gatekeeper
    init(
        settings: LiveViewSettings, hub: Hub, media: MediaDirectory, snapshotQuality: Int,
        policy: ConnectionPolicy? = nil, turns: LoopTurns = LoopTurns(), whep: (any WHEPService)? = nil,
        input: @escaping @Sendable (LiveViewInput) -> Void
    ) {
        self.whep = whep
        self.settings = settings
        self.hub = hub
        gatekeeper = Gatekeeper(loop: hub.loop, policy: policy ?? ConnectionPolicy(maxClients: settings.maxClients), turns: turns)
        self.media = media
        self.input = input
        self.snapshotQuality = snapshotQuality
        page = ByteBuffer(string: LiveViewPage.html(webRTC: whep != nil))
        partTrailer = ByteBuffer(string: Framing.partTrailer)
    }

    /// A connection's handlers, after TLS's (if any): the guard first, so that it sees the
    /// bytes on the wire (docs/live-view.md#security), then NIOHTTP1 with a request counter
    /// between its decoder and its pipelining handler, then the connection handler.
    func configure(_ channel: any Channel, tls: NIOSSLContext?) throws {
        let sync = channel.pipeline.syncOperations
        let connection = ConnectionGuard(gatekeeper: gatekeeper)
        try sync.addHandler(connection)
        if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
        try sync.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: false)
        let decoder = try sync.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
        try sync.addHandler(RequestCounter(connection), position: .after(decoder))
        try sync.addHandler(HTTPConnection(server: self, connection: connection))
    }
}

public struct LiveViewError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

/// The live view's HTTP server (`[http]`): one SwiftNIO event loop thread, which sleeps in
/// `epoll_wait` while no client is connected (no timer is armed until one is). Frames and
/// events reach it from their own threads; it never calls into the input path, which it
/// reaches only through ``LiveViewHooks/input``.
public final class LiveViewServer: Sendable {
    public let settings: LiveViewSettings
    private let group: MultiThreadedEventLoopGroup
    private let core: ServerCore
    private let tls: NIOSSLContext?
    private let logger: Logger
    private let channel = Mutex<(any Channel)?>(nil)

    /// Reads the TLS files when configured (a bad file is an error here, before anything starts).
    public init(
        settings: LiveViewSettings, outputDirectory: String, snapshotQuality: Int = 90, hooks: LiveViewHooks, logger: Logger
    ) throws(LiveViewError) {
        if let files = settings.tls {
            do {
                let chain = try NIOSSLCertificate.fromPEMFile(files.certificate).map { NIOSSLCertificateSource.certificate($0) }
                let key = try NIOSSLPrivateKey(file: files.privateKey, format: .pem)
                tls = try NIOSSLContext(configuration: Self.tlsConfiguration(certificateChain: chain, privateKey: key))
            } catch {
                throw LiveViewError("http: cannot use \(files.certificate) and \(files.privateKey) for TLS: \(error)")
            }
        } else {
            tls = nil
        }
        self.settings = settings
        self.logger = logger
        // NIO tells the turns when each turn of the loop ends (fairness between connections).
        let turns = LoopTurns()
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: turns)
        // Named after its service, as the daemon's own threads are (docs/architecture.md#threads).
        group.next().execute { nameThisThread("evc-live-view") }
        let hub = Hub(loop: group.next(), maxClients: settings.maxClients, frames: hooks.frames, logger: logger)
        hub.attach(
            PreviewFeed(
                source: hooks.frames, viewfinder: hooks.viewfinder, previewWidth: settings.previewWidth, quality: settings.previewQuality,
                demand: hub.demand, logger: logger
            ) { [hub] frame in hub.publish(frame) })
        core = ServerCore(
            settings: settings, hub: hub, media: MediaDirectory(path: outputDirectory), snapshotQuality: snapshotQuality, turns: turns,
            whep: settings.webRTC ? hooks.whep : nil, input: hooks.input)
    }

    /// TLS 1.2 and 1.3 only, with forward-secret AEAD suites only (ECDHE with AES-GCM or
    /// ChaCha20-Poly1305; TLS 1.3's suites are all of that kind), docs/live-view.md#security.
    static func tlsConfiguration(certificateChain: [NIOSSLCertificateSource], privateKey: NIOSSLPrivateKey) -> TLSConfiguration {
        var c = TLSConfiguration.makeServerConfiguration(certificateChain: certificateChain, privateKey: .privateKey(privateKey))
        c.minimumTLSVersion = .tlsv12
        c.cipherSuiteValues = [
            .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ]
        return c
    }

    /// Binds the listen address; throws when it cannot (in use, not an address of this host).
    public func start() async throws(LiveViewError) {
        let core = core
        let tls = tls
        let policy = core.gatekeeper.policy
        // Connections beyond the slots (docs/live-view.md#security) are closed as they come.
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 32)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: policy.writeBufferLow, high: policy.writeBufferHigh))
            .childChannelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(policy.socketSendBuffer))
            .childChannelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(policy.socketReceiveBuffer))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try core.configure(channel, tls: tls)
                }
            }
        do {
            let bound = try await bootstrap.bind(host: settings.listen.host, port: settings.listen.port).get()
            channel.withLock { $0 = bound }
        } catch {
            try? await group.shutdownGracefully()
            throw LiveViewError("http: cannot listen on \(settings.listen): \(error)")
        }
        logger.info("live view on \(tls == nil ? "http" : "https")://\(settings.listen)/", metadata: ["http.listen": "\(settings.listen)"])
    }

    /// Closes every connection and the loop.
    public func stop() async {
        core.hub.close()
        let bound = channel.withLock { c in
            defer { c = nil }
            return c
        }
        try? await bound?.close()
        try? await group.shutdownGracefully()
    }

    /// Gives `/events` every JSON line the daemon writes (add it to the line writer).
    public var eventSink: any JSONLineSink { EventSink(hub: core.hub) }

    private struct EventSink: JSONLineSink {
        let hub: Hub
        func send(_ line: String) { hub.publish(line: line) }
    }
}

extension LiveViewServer {
    /// Serves one connection on `channel` with the handlers every real connection gets
    /// (the guard, NIOHTTP1, the connection), on a server of its own without a camera whose
    /// inputs go nowhere: for driving the request path with bytes that never crossed a
    /// socket (an `EmbeddedChannel` in Tests/Fuzz). Call on the channel's event loop.
    /// Returns what ends a turn of the loop, which an embedded loop does not know of (a
    /// connection answers one pipelined request per turn, ``LoopTurns``): it says whether a
    /// request still waits for a later turn (advance the loop's clock by a millisecond, then
    /// call it again).
    public static func serveStandalone(
        _ channel: any Channel, settings: LiveViewSettings, outputDirectory: String, logger: Logger
    ) throws -> () -> Bool {
        let hub = Hub(loop: channel.eventLoop, maxClients: settings.maxClients, frames: { nil }, logger: logger)
        let turns = LoopTurns()
        let core = ServerCore(
            settings: settings, hub: hub, media: MediaDirectory(path: outputDirectory), snapshotQuality: 90, turns: turns,
            input: { _ in })
        try core.configure(channel, tls: nil)
        return {
            turns.endTurn()
            return turns.waiting > 0
        }
    }
}
