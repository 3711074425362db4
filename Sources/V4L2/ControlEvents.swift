#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import LinuxIO
import Synchronization

/// What changed in a control event (`V4L2_EVENT_CTRL_CH_*`).
public struct ControlChanges: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// `V4L2_EVENT_CTRL_CH_VALUE`
    public static let value = ControlChanges(rawValue: 1 << 0)
    /// `V4L2_EVENT_CTRL_CH_FLAGS`
    public static let flags = ControlChanges(rawValue: 1 << 1)
    /// `V4L2_EVENT_CTRL_CH_RANGE`
    public static let range = ControlChanges(rawValue: 1 << 2)
}

/// A `V4L2_EVENT_CTRL` event: a control's value, flags or range as they are after a change
/// made through another file handle (another program, or the driver itself).
public struct ControlEvent: Hashable, Sendable {
    public var id: ControlID
    public var changes: ControlChanges
    public var type: ControlType
    public var value: Int64
    public var flags: ControlFlags
    public var minimum: Int64
    public var maximum: Int64
    public var step: Int64
    public var defaultValue: Int64
    /// The kernel's event sequence number (gaps mean events were dropped by the kernel).
    public var sequence: UInt32

    public init(
        id: ControlID, changes: ControlChanges, type: ControlType = .integer, value: Int64, flags: ControlFlags = [],
        minimum: Int64 = 0, maximum: Int64 = 0, step: Int64 = 1, defaultValue: Int64 = 0, sequence: UInt32 = 0
    ) {
        self.id = id
        self.changes = changes
        self.type = type
        self.value = value
        self.flags = flags
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.sequence = sequence
    }
}

/// What the device reports while watched: control events, then possibly its removal.
public enum DeviceNotification: Hashable, Sendable {
    case control(ControlEvent)
    /// The device is gone (EPOLLHUP/EPOLLERR, or ENODEV on dequeue). The stream ends after this.
    case removed
}

extension V4L2Device {
    /// Subscribes this file handle to `V4L2_EVENT_CTRL` for `id`: value, flag and range changes
    /// made elsewhere. With `sendInitial` the current state arrives as a first event.
    public func subscribe(to id: ControlID, sendInitial: Bool = false) throws(V4L2Error) {
        var sub = v4l2_event_subscription()
        sub.type = UInt32(V4L2_EVENT_CTRL)
        sub.id = id.rawValue
        sub.flags = sendInitial ? UInt32(V4L2_EVENT_SUB_FL_SEND_INITIAL) : 0
        let e = subscribeEvent(fd, &sub, subscribe: true)
        guard e == 0 else { throw error(e, .query, control: id.description, context: "subscribing to control events") }
    }

    /// Watches the device on `loop` (EPOLLPRI, the way V4L2 signals pending events) and
    /// delivers its control events, then `.removed` when it goes away. Subscribe to the
    /// controls of interest with ``subscribe(to:sendInitial:)``; the subscriptions belong to
    /// the open file, so they hold for this stream. Ending the stream's iteration (or
    /// dropping it) stops the watch.
    ///
    /// The loop watches a `dup` of the fd: it shares the open file (and so the event queue)
    /// but is closed by the loop itself after its last handler call, so no handler can run
    /// against a closed or reused descriptor while this object is released.
    public func notifications(on loop: IOLoop) throws(V4L2Error) -> AsyncStream<DeviceNotification> {
        let watched = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard watched >= 0 else {
            throw V4L2Error(code: .failed, errno: errno, device: path, context: "dup for the event watch")
        }
        // The newest 256 kept: the kernel's own queue keeps only each control's latest event
        // too; `.removed` comes last, so it is never the one dropped.
        let (stream, continuation) = AsyncStream<DeviceNotification>.makeStream(bufferingPolicy: .bufferingNewest(256))
        // The stream can end (consumer gone, or removal seen by the handler) before register
        // returns its token; the watch then ends as soon as the token exists.
        let watch = WatchRegistration(loop: loop)
        continuation.onTermination = { _ in watch.end() }
        do {
            let token = try loop.register(
                fd: watched, interest: .priority,
                handler: { readiness in
                    drainEvents(fd: watched, readiness: readiness, continuation: continuation)
                },
                onRemove: {
                    close(watched)
                    continuation.finish()
                })
            watch.started(token)
        } catch {
            close(watched)
            continuation.finish()
            throw V4L2Error(code: .failed, errno: error.errno, device: path, context: error.context)
        }
        return stream
    }
}

/// Dequeues until a control event: nil when nothing is pending, the errno on failure.
private func readControlEvent(_ fd: Int32) -> Result<ControlEvent?, SystemError> {
    while true {
        var ev = v4l2_event()
        let e = dequeueEvent(fd, &ev)
        if e == ENOENT || e == EAGAIN { return .success(nil) }
        guard e == 0 else { return .failure(SystemError(errno: e)) }
        guard ev.type == UInt32(V4L2_EVENT_CTRL) else { continue }
        let c = evc_v4l2_event_ctrl(&ev).pointee
        let type = ControlType(rawValue: c.type)
        return .success(
            ControlEvent(
                id: ControlID(ev.id), changes: ControlChanges(rawValue: c.changes), type: type,
                value: type == .integer64 ? c.value64 : Int64(c.value), flags: ControlFlags(rawValue: c.flags),
                minimum: Int64(c.minimum), maximum: Int64(c.maximum), step: Int64(c.step),
                defaultValue: Int64(c.default_value), sequence: ev.sequence))
    }
}

/// Runs on the I/O thread: dequeue everything pending; a hangup or a failing dequeue (ENODEV:
/// unregistered) ends the stream. Works on the watch's own fd, never the device object.
private func drainEvents(
    fd: Int32, readiness: Readiness, continuation: AsyncStream<DeviceNotification>.Continuation
) {
    // Events first: a device that goes away may still have queued ones worth delivering.
    while true {
        switch readControlEvent(fd) {
        case .success(let event?):
            continuation.yield(.control(event))
            continue
        case .success(nil):
            break
        case .failure:
            continuation.yield(.removed)
            continuation.finish()
            return
        }
        break
    }
    if readiness.contains(.hangup) || readiness.contains(.error) {
        continuation.yield(.removed)
        continuation.finish()
    }
}

/// The IOLoop registration of one watch, ended exactly once whichever comes first: the
/// stream's termination or the registration itself.
private final class WatchRegistration: Sendable {
    private enum State { case starting, running(IOToken), ended }
    private let loop: IOLoop
    private let state = Mutex<State>(.starting)
    init(loop: IOLoop) { self.loop = loop }

    func started(_ token: IOToken) {
        let endNow = state.withLock { s -> Bool in
            if case .ended = s { return true }
            s = .running(token)
            return false
        }
        if endNow { loop.remove(token) }
    }

    func end() {
        let token = state.withLock { s -> IOToken? in
            defer { s = .ended }
            if case .running(let t) = s { return t }
            return nil
        }
        if let token { loop.remove(token) }
    }
}
