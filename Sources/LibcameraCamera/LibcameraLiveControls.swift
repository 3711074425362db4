import Synchronization

/// The controls of a libcamera camera whose stream opens and closes with the capture stream
/// (``LibcameraFrameStream``): each value set goes on the running stream's next request, and
/// is kept, so the next stream starts with it (its first request carries every value held).
/// Called from the input thread: a set only stores values behind a lock, never waits for the camera.
public final class LibcameraLiveControls: LibcameraControlSink {
    private struct State {
        /// The running stream (a recorder in tests).
        var stream: (any LibcameraControlSink & AnyObject)?
        var floats: [UInt32: Float] = [:]
        var rectangles: [UInt32: SensorRect] = [:]
        var integers: [UInt32: Int64] = [:]
    }
    private let state = Mutex(State())
    /// The latest frame's `ExposureTime` (µs), 0 before any frame reported one.
    private let exposureTime = Atomic<Int64>(0)
    /// `AfMode` and `AfTrigger`, when the camera has both and `AfMode` offers `Auto`.
    private let autofocus: (mode: UInt32, trigger: UInt32)?

    /// `controls`: the camera's (``Libcamera/controls(of:)``).
    public init(controls: [LibcameraControl]) {
        let byName = Dictionary(controls.map { ($0.name, $0) }) { a, _ in a }
        if let mode = byName["AfMode"], let trigger = byName["AfTrigger"],
            mode.values.isEmpty || mode.values.contains(Self.afModeAuto)
        {
            autofocus = (mode.id, trigger.id)
        } else {
            autofocus = nil
        }
    }

    /// libcamera's `AfModeAuto` (a cycle when triggered) and `AfTriggerStart`.
    static let afModeAuto: Int32 = 1
    static let afTriggerStart: Int64 = 0

    /// Whether the camera focuses on request (``startAutofocus()``).
    var hasAutofocus: Bool { autofocus != nil }

    public func set(_ id: UInt32, float value: Float) throws(LibcameraError) {
        try state.withLock { s throws(LibcameraError) in
            try s.stream?.set(id, float: value)
            s.floats[id] = value
        }
    }

    public func set(_ id: UInt32, rectangle value: SensorRect) throws(LibcameraError) {
        try state.withLock { s throws(LibcameraError) in
            try s.stream?.set(id, rectangle: value)
            s.rectangles[id] = value
        }
    }

    public func set(_ id: UInt32, integer value: Int64) throws(LibcameraError) {
        try state.withLock { s throws(LibcameraError) in
            try s.stream?.set(id, integer: value)
            s.integers[id] = value
        }
    }

    public var reportedExposureTime: Int64? {
        let us = exposureTime.load(ordering: .relaxed)
        return us > 0 ? us : nil
    }

    /// A frame's `ExposureTime` metadata (µs; 0: it had none), from the stream's thread.
    func noteExposureTime(_ us: Int64) {
        if us > 0 { exposureTime.store(us, ordering: .relaxed) }
    }

    /// Starts one autofocus cycle on the running stream (`AfMode` = Auto, `AfTrigger` =
    /// Start on its next request); false when the camera has no autofocus or no stream runs.
    @discardableResult
    public func startAutofocus() -> Bool {
        guard let autofocus else { return false }
        return state.withLock { s in
            guard let stream = s.stream else { return false }
            do {
                try stream.set(autofocus.mode, integer: Int64(Self.afModeAuto))
                try stream.set(autofocus.trigger, integer: Self.afTriggerStart)
                return true
            } catch {
                return false
            }
        }
    }

    /// A stream configured and about to start: every value held goes on its first request.
    func attach(_ stream: some LibcameraControlSink & AnyObject) {
        state.withLock { s in
            for (id, value) in s.floats { try? stream.set(id, float: value) }
            for (id, value) in s.rectangles { try? stream.set(id, rectangle: value) }
            for (id, value) in s.integers { try? stream.set(id, integer: value) }
            s.stream = stream
        }
    }

    /// The stream is stopping: values wait for the next one.
    func detach(_ stream: some LibcameraControlSink & AnyObject) {
        state.withLock { s in
            if s.stream === stream { s.stream = nil }
        }
    }
}
