import Vocabulary
import LinuxIO
import Logging
import NIOCore
import Synchronization
import Frames
import Recording

/// The server's shared state: who watches the stream, who listens to events, the preview
/// feed, the snapshots in flight.
///
/// `@unchecked Sendable`: every stored `var` is read and written on `loop` only — the
/// connection handlers run there, and the feed's thread and the line writer hop there with
/// `loop.execute` — so no two threads ever touch them. The atomic is read from any thread.
final class Hub: @unchecked Sendable {
    let loop: any EventLoop
    let maxClients: Int
    private var viewers: [ObjectIdentifier: HTTPConnection] = [:]
    private var listeners: [ObjectIdentifier: HTTPConnection] = [:]
    private var snapshots = 0
    /// Listeners of `/events`: the line writer does not wake the loop while there are none.
    private let listenerCount = Atomic<Int>(0)
    private var feed: PreviewFeed?
    /// Whether a viewer can take a frame: the feed encodes only then.
    let demand = ViewerDemand()
    /// Set once the server stops: nothing is handed to the loop after that (it shuts down).
    private let closed = Mutex(false)
    let frames: @Sendable () -> FrameSource?
    let logger: Logger

    init(loop: any EventLoop, maxClients: Int, frames: @escaping @Sendable () -> FrameSource?, logger: Logger) {
        self.loop = loop
        self.maxClients = maxClients
        self.frames = frames
        self.logger = logger
    }

    func attach(_ feed: PreviewFeed) { self.feed = feed }

    /// Runs `body` on the loop, unless the server has stopped. The lock is held while the
    /// task is handed over, so ``close()`` returns only when no hand-over is in progress.
    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        closed.withLock { closed in
            if !closed { loop.execute(body) }
        }
    }

    /// The server stops: the feed ends, and nothing more reaches the loop.
    func close() {
        closed.withLock { $0 = true }
        feed?.stop()
    }

    /// Room for one more stream (`/stream.mjpg`, `/events`, a snapshot being taken).
    var hasRoom: Bool {
        loop.preconditionInEventLoop()
        return viewers.count + listeners.count + snapshots < maxClients
    }

    func addViewer(_ c: HTTPConnection) {
        loop.preconditionInEventLoop()
        viewers[ObjectIdentifier(c)] = c
        countReadyViewers()
        if viewers.count == 1 { feed?.start() }
    }

    /// On the loop, after a viewer came, left, was given a frame or its socket took more or
    /// less: how many can take a frame now.
    func countReadyViewers() {
        loop.preconditionInEventLoop()
        demand.set(ready: viewers.values.reduce(0) { $0 + ($1.canTakeFrame ? 1 : 0) })
    }

    func addListener(_ c: HTTPConnection) {
        loop.preconditionInEventLoop()
        listeners[ObjectIdentifier(c)] = c
        listenerCount.store(listeners.count, ordering: .relaxed)
    }

    /// A connection closed (whatever it was).
    func remove(_ c: HTTPConnection) {
        loop.preconditionInEventLoop()
        if viewers.removeValue(forKey: ObjectIdentifier(c)) != nil {
            countReadyViewers()
            if viewers.isEmpty { feed?.stop() }
        }
        if listeners.removeValue(forKey: ObjectIdentifier(c)) != nil {
            listenerCount.store(listeners.count, ordering: .relaxed)
        }
    }

    /// From the feed's thread: each viewer gets the frame now, or as its newest once it can
    /// take it.
    func publish(_ frame: PreviewFrame) {
        onLoop { [self] in
            for v in viewers.values { v.send(frame) }
            countReadyViewers()
        }
    }

    /// From the line writer: a JSON line for every listener (nothing wakes without one).
    func publish(line: String) {
        guard listenerCount.load(ordering: .relaxed) > 0 else { return }
        var buffer = ByteBuffer()
        buffer.writeString(Framing.event(line))
        onLoop { [self, buffer] in
            for l in listeners.values { l.sendEvent(buffer) }
        }
    }

    /// The newest frame at full size as JPEG, taken on a thread of its own (the stream is
    /// started for it when it is off); nil when there is no camera or it gave no frame.
    func snapshot(quality: Int) -> EventLoopFuture<PreviewFrame?> {
        loop.preconditionInEventLoop()
        let promise = loop.makePromise(of: PreviewFrame?.self)
        guard let frames = frames() else {
            promise.succeed(nil)
            return promise.futureResult
        }
        snapshots += 1
        let logger = logger
        startThread(name: "evc-snapshot") { [self] in
            frames.addViewer()
            defer { frames.removeViewer() }
            var result: PreviewFrame?
            do {
                let ring = try frames.frame(nearest: monotonicNow(), timeout: .seconds(3))
                let jpeg = try JPEG.data(from: ring.frame, quality: quality)
                result = PreviewFrame(jpeg: ByteBuffer(bytes: jpeg), time: ring.time, sequence: ring.frame.sequence)
            } catch {
                logger.info("live view: no snapshot: \(error)")
            }
            onLoop { [result] in promise.succeed(result) }
        }
        return promise.futureResult.always { [self] _ in snapshots -= 1 }
    }
}
