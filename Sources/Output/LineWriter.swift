#if canImport(Glibc)
import Glibc
#endif
import Vocabulary
import Runtime
import LinuxIO
import Synchronization

/// Another destination of the daemon's JSON lines (the MQTT publisher): it gets every line
/// the socket gets, from a writer task of its own.
public protocol JSONLineSink: Sendable {
    func send(_ line: String)
}

/// Writes the daemon's lines (stdout, and the socket when there is one) off the input path:
/// `emit` queues a typed event; a writer task per destination formats and writes it.
///
/// Stdout is written with blocking writes (a pipe or a terminal), by a task on a thread of
/// its own: a stdout nobody reads (`run --json | sleep 999`, a terminal paused with Ctrl-S)
/// stalls that thread only — not the tasks of the main executor, the socket's writer, the
/// input thread or shutdown. Each queue keeps the newest 10,000 lines. A stdout that fails
/// (EPIPE: `| head -1` exited; SIGPIPE is ignored by `run`) ends stdout's writer only.
public final class LineWriter: EventSink {
    /// What a line is made from (formatted by the writers, off the input thread).
    private typealias Line = DaemonEvent
    private let json: Bool
    private let toStdout: AsyncStream<Line>.Continuation
    private let stdoutWriter: Task<Void, Never>
    /// The stdout writer's thread: blocked in `write` while stdout is.
    private let stdoutThread: ThreadExecutor
    /// Set when stdout failed: lines are no longer queued for it.
    private let stdoutFailed = Flag()
    private final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }
    /// How long shutdown waits for stdout to take the last lines.
    let flushTimeout: Duration
    /// The socket's own queue and writer: a stuck stdout does not hold its clients back.
    private let toSocket = Mutex<(server: SocketServer, queue: AsyncStream<Line>.Continuation, writer: Task<Void, Never>)?>(nil)
    /// Further JSON line destinations, each with its own queue and writer.
    private let toSinks = Mutex<[(queue: AsyncStream<Line>.Continuation, writer: Task<Void, Never>)]>([])

    /// Sends every JSON line to `sink` from now on (until ``finishAndFlush()``).
    public func add(_ sink: any JSONLineSink) {
        let (stream, queue) = AsyncStream.makeStream(of: Line.self, bufferingPolicy: .bufferingNewest(10_000))
        let writer = Task.detached { for await line in stream { sink.send(line.json) } }
        toSinks.withLock { $0.append((queue, writer)) }
    }

    /// Sends JSON lines to `server` from now on.
    public var socket: SocketServer? {
        get { toSocket.withLock { $0?.server } }
        set {
            let replacement = newValue.map { server in
                let (stream, queue) = AsyncStream.makeStream(of: Line.self, bufferingPolicy: .bufferingNewest(10_000))
                return (server: server, queue: queue, writer: Task.detached { for await line in stream { server.broadcast(line.json) } })
            }
            let old = toSocket.withLock { s in
                defer { s = replacement }
                return s?.queue
            }
            old?.finish()
        }
    }

    /// `fd`: where the lines go (stdout; another descriptor in tests). `stdout` false: no
    /// such lines at all, the sinks only (an app embedding the daemon).
    public init(json: Bool, fd: Int32 = 1, flushTimeout: Duration = .milliseconds(300), stdout: Bool = true) {
        self.json = json
        self.flushTimeout = flushTimeout
        let (stream, continuation) = AsyncStream.makeStream(of: Line.self, bufferingPolicy: .bufferingNewest(10_000))
        toStdout = continuation
        let thread = ThreadExecutor(name: "evc-lines")
        stdoutThread = thread
        let failed = stdoutFailed
        stdoutWriter = Task(executorPreference: thread) {
            for await item in stream where stdout {
                let l = (json ? item.json : item.text) + "\n"
                // A stdout that failed (EPIPE) ends this writer only.
                do { try writeAll(fd, l) } catch {
                    failed.value.store(true, ordering: .relaxed)
                    return
                }
            }
        }
    }

    /// Queues the event's line for every destination.
    public func consume(_ line: DaemonEvent) {
        toSocket.withLock { _ = $0?.queue.yield(line) }
        toSinks.withLock { for s in $0 { s.queue.yield(line) } }
        if !stdoutFailed.value.load(ordering: .relaxed) { toStdout.yield(line) }
    }

    /// Ends the streams and waits until every queued line is written: the last lines
    /// (presses cancelled by the shutdown, the recording finished, `session stopped`) must
    /// be out before the process exits. Stdout gets at most ``flushTimeout``: a stdout nobody
    /// reads must not hold the daemon's exit (returns false then; its thread stays blocked
    /// until the process exits).
    @discardableResult
    public func finishAndFlush() async -> Bool {
        let socketWriter = toSocket.withLock { s -> Task<Void, Never>? in
            s?.queue.finish()
            return s?.writer
        }
        let sinkWriters = toSinks.withLock { sinks in
            for s in sinks { s.queue.finish() }
            return sinks.map(\.writer)
        }
        toStdout.finish()
        // The socket's writer never blocks (SocketServer queues per client).
        await socketWriter?.value
        for w in sinkWriters { await w.value }
        let flushed = OneShot<Bool>()
        let writer = stdoutWriter
        Task { [flushed] in
            await writer.value
            flushed.fulfil(true)
        }
        let timeout = flushTimeout
        let timer = Task { [flushed] in
            try? await Task.sleep(for: timeout)
            flushed.fulfil(false)
        }
        defer { timer.cancel() }
        let done = await flushed.value()
        if done { stdoutThread.stop() }
        return done
    }
}

extension DaemonEvent {
    /// The event as a JSON line (docs/json-lines.md).
    var json: String {
        switch self {
        case .pipeline(let e): JSONLines.line(e)
        case .outcome(let o, let t): JSONLines.outcome(o, time: t)
        }
    }
    /// The event as a readable line.
    var text: String {
        switch self {
        case .pipeline(let e): ReadableLines.line(e)
        case .outcome(let o, let t): ReadableLines.outcome(o, time: t)
        }
    }
}
