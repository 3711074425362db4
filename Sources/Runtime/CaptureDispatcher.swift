import Capture
import Vocabulary
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An app's capture-button handlers, in the spirit of the phone camera's capture-event
/// interaction: a primary handler and an optional secondary one.
///
/// Without a secondary handler, secondary presses reach the primary handler reported as
/// `primary` (configure the core with `CaptureCoreSettings.hasSecondaryHandler =
/// interaction.hasSecondaryHandler`; the core makes that routing decision once per press).
public final class CaptureEventInteraction: Sendable {
    public typealias Handler = @Sendable (CaptureEvent) async -> Void

    public let primary: Handler
    public let secondary: Handler?
    private let enabled: Atomic<Bool>

    public init(primary: @escaping Handler, secondary: Handler? = nil) {
        self.primary = primary
        self.secondary = secondary
        self.enabled = Atomic(true)
    }

    /// One handler for both buttons (secondary presses reported as `primary`).
    public convenience init(handler: @escaping Handler) {
        self.init(primary: handler, secondary: nil)
    }

    public var hasSecondaryHandler: Bool { secondary != nil }

    /// A disabled interaction receives no new presses. A press that began while enabled
    /// still gets its `held`/`ended`/`cancelled`, so a handler never sees half a press.
    public var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }
}

/// Delivers capture events to an interaction's handlers without ever blocking the caller
/// (the input thread).
///
/// Guarantees:
/// - `deliver` never waits for a handler: it appends to the handler's queue under a short
///   lock and, if the handler's task is parked, wakes it. It never suspends.
/// - Each handler has its own queue and its own task, and is called with one event at a
///   time, in the order `deliver` received them. All events of a press go to one handler,
///   so per press id the order is `began`, at most one `held`, then one `ended` or
///   `cancelled` — never reordered.
/// - A slow handler delays only its own later events (they wait in its queue, in order).
///   It never delays the input thread, the other handler, or reorders anything. Its queue
///   is unbounded: a handler that never catches up grows memory (`pendingCount` shows it).
/// - Each handler runs on its own thread (a task executor preference): busy work elsewhere
///   in the process — a saturated cooperative pool — cannot starve the handlers, and a
///   handler blocking its thread blocks only itself. Awaiting inside a handler is fine; it
///   resumes on the same thread. While its queue is empty the handler's thread sleeps on a
///   semaphore, so a wake-up is one post from the input thread.
/// - Presses that begin while the interaction is disabled are not delivered at all (none
///   of their events); presses delivered before it was disabled are delivered to the end.
/// - `finish()` stops accepting events and returns when both queues are drained.
public final class CaptureDispatcher: Sendable {
    public let interaction: CaptureEventInteraction
    private let primaryQueue: HandlerQueue
    private let secondaryQueue: HandlerQueue?
    /// Presses delivered so far and not yet ended; touched only by `deliver` callers.
    private let open: Mutex<[PressID]>

    public init(interaction: CaptureEventInteraction) {
        self.interaction = interaction
        primaryQueue = HandlerQueue(interaction.primary, thread: "evc-primary")
        secondaryQueue = interaction.secondary.map { HandlerQueue($0, thread: "evc-secondary") }
        var presses: [PressID] = []
        presses.reserveCapacity(16)
        open = Mutex(presses)
    }

    /// Queues one event for its handler.
    public func deliver(_ event: CaptureEvent) {
        var wake = (false, false)
        open.withLock { open in route(event, &open, &wake) }
        if wake.0 { primaryQueue.unpark() }
        if wake.1 { secondaryQueue?.unpark() }
    }

    /// Queues every capture event of a core's output buffer, in order. One lock round for
    /// the whole buffer.
    public func deliver(_ events: [CaptureEvent]) {
        var wake = (false, false)
        open.withLock { open in
            for e in events { route(e, &open, &wake) }
        }
        if wake.0 { primaryQueue.unpark() }
        if wake.1 { secondaryQueue?.unpark() }
    }

    /// Decides whether an event is delivered and queues it; which parked drain threads to
    /// wake is returned in `wake` (primary, secondary), woken by the caller outside the lock.
    private func route(_ event: CaptureEvent, _ open: inout [PressID], _ wake: inout (Bool, Bool)) {
        if event.phase == .began {
            guard interaction.isEnabled else { return }
            open.append(event.press)
        } else {
            guard let i = open.firstIndex(of: event.press) else { return }
            if event.phase == .ended || event.phase == .cancelled { open.remove(at: i) }
        }
        if event.action == .secondary, let secondaryQueue {
            if secondaryQueue.enqueue(event) { wake.1 = true }
        } else {
            if primaryQueue.enqueue(event) { wake.0 = true }
        }
    }

    /// Events queued and not yet handled, over both handlers.
    var pendingCount: Int { primaryQueue.pendingCount + (secondaryQueue?.pendingCount ?? 0) }

    /// Stops accepting events and waits until every queued event was handled.
    public func finish() async {
        primaryQueue.close()
        secondaryQueue?.close()
        await primaryQueue.task.value
        await secondaryQueue?.task.value
    }

    deinit {
        primaryQueue.close()
        secondaryQueue?.close()
    }
}

/// One handler's ordered queue and the task that drains it.
final class HandlerQueue: Sendable {
    private struct State {
        var pending: [CaptureEvent] = []
        /// Taken by the drain task and not yet handled.
        var inFlight = 0
        /// The drain thread waits (or is about to) on `wakeUp`; whoever clears this signals.
        var parked = false
        var closed = false
    }
    private let state: Mutex<State>
    /// A hint for the spinning drain task, read without the lock: something was queued.
    private let hasWork = Atomic<Bool>(false)
    private let taskBox: Mutex<Task<Void, Never>?> = Mutex(nil)

    private let executor: ThreadExecutor
    /// Where the idle drain task parks its thread (see `drain`).
    private let wakeUp = DispatchSemaphore(value: 0)

    /// `thread`: the name of the handler's thread (`evc-primary`, `evc-secondary`).
    init(_ handler: @escaping CaptureEventInteraction.Handler, thread: String) {
        executor = ThreadExecutor(name: thread)
        var s = State()
        s.pending.reserveCapacity(64)
        state = Mutex(s)
        let executor = self.executor
        let t = Task(executorPreference: executor) { [self] in
            await self.drain(handler)
            executor.stop()
        }
        taskBox.withLock { $0 = t }
    }

    var task: Task<Void, Never> { taskBox.withLock { $0! } }

    var pendingCount: Int { state.withLock { $0.pending.count + $0.inFlight } }

    /// Queues an event; true when the drain thread is parked: call ``unpark()`` (outside
    /// any lock).
    func enqueue(_ event: CaptureEvent) -> Bool {
        let wasParked = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.pending.append(event)
            defer { s.parked = false }
            return s.parked
        }
        if !hasWork.load(ordering: .relaxed) { hasWork.store(true, ordering: .releasing) }
        return wasParked
    }

    /// Wakes the parked drain thread (once per park: only the caller that saw it parked).
    func unpark() { wakeUp.signal() }

    func close() {
        let wasParked = state.withLock { s -> Bool in
            s.closed = true
            defer { s.parked = false }
            return s.parked
        }
        if wasParked { unpark() }
    }

    /// Spinning only pays when another CPU can queue work meanwhile. On one CPU (a Pi Zero,
    /// the one-CPU test VM) a spinning drain task holds the only CPU the input thread
    /// needs: measured in the VM, it added hundreds of µs to the next event's latency.
    static let spinsBeforeParking: Int = {
        #if canImport(Glibc)
        return sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1 ? 20_000 : 0
        #else
        return 20_000
        #endif
    }()

    private func drain(_ handler: CaptureEventInteraction.Handler) async {
        // Two buffers swapped under the lock: neither is reallocated in steady state.
        var batch: [CaptureEvent] = []
        batch.reserveCapacity(64)
        // Read once: a `static let` costs a `swift_once` check per access, and the spin
        // loop below reads it on every turn.
        let spinsBeforeParking = Self.spinsBeforeParking
        while true {
            // Before parking, look again for a short while (~tens of µs): under a steady
            // stream the thread then never parks, and a wake-up is paid only once per
            // burst, not per event.
            var spins = 0
            while spins < spinsBeforeParking && !hasWork.load(ordering: .acquiring) { spins += 1 }
            // Park by blocking this thread: it is the handler's own (`executor` runs this
            // task's jobs and nothing else), so waking the handler is one semaphore post
            // from the input thread — not a task resumption through the executor's queue.
            let park = state.withLock { s -> Bool in
                if !s.pending.isEmpty || s.closed { return false }
                s.parked = true
                return true
            }
            if park { wakeUp.wait() }
            let closed = state.withLock { s -> Bool in
                hasWork.store(false, ordering: .relaxed)
                swap(&s.pending, &batch)
                s.inFlight = batch.count
                return s.closed
            }
            if batch.isEmpty && closed { return }
            for e in batch {
                await handler(e)
                state.withLock { $0.inFlight -= 1 }
            }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
