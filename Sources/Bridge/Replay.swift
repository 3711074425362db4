import Capture
import Evdev

/// One recording to replay: one device.
public struct ReplayInput: Sendable {
    /// The path as given (errors name it).
    public var path: String
    public var recording: EvemuRecording

    public init(path: String, recording: EvemuRecording) {
        self.path = path
        self.recording = recording
    }

    /// The node name a replayed device gets: the recording's file name.
    public var node: String { path.split(separator: "/").last.map(String.init) ?? path }

    /// Loads and parses every file before anything is replayed, so a bad file stops the
    /// replay before it prints a single event.
    public static func load(paths: [String]) throws(EvemuError) -> [ReplayInput] {
        var inputs: [ReplayInput] = []
        for p in paths { inputs.append(ReplayInput(path: p, recording: try EvemuRecording.load(path: p))) }
        return inputs
    }
}

/// One thing a replay reports, with its JSON line (spec §6) and its readable line.
public enum ReplayOutput: Sendable {
    case capture(CaptureEvent)
    /// Device, session and controls objects: already encoded.
    case line(json: String, text: String)

    public var json: String {
        switch self {
        case .capture(let e): JSONLines.capture(e)
        case .line(let json, _): json
        }
    }
    /// The readable line, control characters escaped (``ReadableLines/escaped(_:)``).
    public var text: String {
        switch self {
        case .capture(let e): ReadableLines.escaped(ReadableLines.capture(e))
        case .line(_, let text): ReadableLines.escaped(text)
        }
    }
    public var captureEvent: CaptureEvent? {
        if case .capture(let e) = self { return e }
        return nil
    }
}

/// The seam for the controls core (slider and light-press inputs → camera controls). The
/// replay pipeline drives it on the same clock as the capture core: deadlines of both fire
/// in time order, and it sees every frame that carries slider or light-press inputs.
public protocol ReplayControlsStage {
    /// A device joins (before any frame). `index` identifies it in later calls.
    mutating func deviceAdded(_ profile: DeviceProfile, index: Int, at now: Timestamp) -> [ReplayOutput]
    /// A whole frame (events up to `SYN_REPORT`) of a device, while the session runs, when the
    /// capture core found slider or light-press inputs in it (`inputs`).
    mutating func handle(frame: [InputEvent], device index: Int, inputs: [ControlInput], at now: Timestamp)
        -> [ReplayOutput]
    /// Events were lost on a device (`SYN_DROPPED` in the recording).
    mutating func eventsLost(device index: Int, at now: Timestamp) -> [ReplayOutput]
    /// The earliest time `advance(to:)` has something to do.
    var nextDeadline: Timestamp? { get }
    mutating func advance(to now: Timestamp) -> [ReplayOutput]
    /// End of input: the device goes away.
    mutating func deviceRemoved(index: Int, at now: Timestamp) -> [ReplayOutput]
}

/// Feeds evemu recordings through the live pipeline on the recordings' own clock (spec §6):
/// roles from `RoleClassifier` (with the config's overrides) exactly as for a live device,
/// frames of all files merged by time, the capture core's deadlines firing in recording
/// time, and at the end pending deadlines fired, then every device removed (presses in
/// flight cancelled with `device-removed`).
///
/// Order of outputs: `device` added (file order), `session` started, then events in time
/// order; at the end deadlines, `device` removed (file order, each after its
/// cancellations), `session` stopped.
public struct ReplayPipeline {
    public let inputs: [ReplayInput]
    public let config: Config
    public private(set) var profiles: [DeviceProfile]
    public var controls: (any ReplayControlsStage)?

    public init(inputs: [ReplayInput], config: Config = Config(), controls: (any ReplayControlsStage)? = nil) {
        self.inputs = inputs
        self.config = config
        self.controls = controls
        profiles = inputs.map { input in
            RoleClassifier.profile(
                for: input.recording.description, node: input.node,
                config: config.overrides(forDevice: input.recording.description.name))
        }
    }

    /// A frame of one device, or a `SYN_DROPPED` (lost events) marker.
    struct Frame {
        var time: Timestamp
        var device: Int
        var sequence: Int
        var events: [InputEvent]
        var lost: Bool
    }

    /// Splits recordings into frames and merges them by time (ties: file order, then
    /// recording order). Events after the last `SYN_REPORT` never reached a reader and are
    /// dropped, as the kernel would; after a `SYN_DROPPED` the rest of that frame is dropped
    /// (libevdev's rule) and the loss is reported.
    static func frames(_ inputs: [ReplayInput]) -> [Frame] {
        var frames: [Frame] = []
        for (d, input) in inputs.enumerated() {
            var pending: [InputEvent] = []
            var dropping = false
            for e in input.recording.events {
                if e.type == .syn && e.code == EventCode.synDropped.code {
                    frames.append(Frame(time: e.time, device: d, sequence: frames.count, events: [], lost: true))
                    pending.removeAll()
                    dropping = true
                } else if e.isSynReport {
                    if !dropping {
                        pending.append(e)
                        frames.append(Frame(time: e.time, device: d, sequence: frames.count, events: pending, lost: false))
                    }
                    pending.removeAll()
                    dropping = false
                } else if !dropping {
                    pending.append(e)
                }
            }
        }
        frames.sort { ($0.time, $0.device, $0.sequence) < ($1.time, $1.device, $1.sequence) }
        return frames
    }

    /// Runs the whole replay, handing each output to `emit` in order.
    public mutating func run(_ emit: (ReplayOutput) -> Void) {
        let frames = Self.frames(inputs)
        let start = frames.first?.time ?? Timestamp(microseconds: 0)
        var pipeline = Pipeline(settings: config.capture, controls: controls)
        let indices = profiles.map { pipeline.addDevice($0, at: start, emit) }
        pipeline.sessionStarted(at: start, emit)
        for frame in frames {
            if frame.lost {
                pipeline.eventsLost(device: indices[frame.device], changes: [], at: frame.time, emit)
            } else {
                pipeline.handle(frame: frame.events, device: indices[frame.device], at: frame.time, emit)
            }
        }
        // End of input: pending deadlines fire, then every device goes.
        pipeline.fireDeadlines(through: nil, emit)
        let end = pipeline.clock
        for i in indices { pipeline.removeDevice(i, at: end, emit) }
        pipeline.sessionStopped(at: end, emit)
        controls = pipeline.controls
    }

    /// Runs the replay and returns its outputs.
    public mutating func run() -> [ReplayOutput] {
        var all: [ReplayOutput] = []
        run { all.append($0) }
        return all
    }
}
