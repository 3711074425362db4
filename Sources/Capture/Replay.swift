import Vocabulary

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
}

/// Feeds evemu recordings through the live pipeline on the recordings' own clock (docs/behaviour.md#replay):
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
    public let settings: CaptureCoreSettings
    public private(set) var profiles: [DeviceProfile]
    public var controls: (any ControlsStage)?

    /// `overrides`: the config's role overrides for a device (every match key applies, as
    /// for a live device; the node is the recording's file name). `udevRole`: the
    /// `EVCAPTURE_ROLE` udev would give the device (recordings carry none; tests pass what
    /// the shipped rules say). Devices are paired (``RoleClassifier/pair(_:)``) as live ones
    /// are, which needs a `phys` a recording does not carry.
    public init(
        inputs: [ReplayInput], settings: CaptureCoreSettings = CaptureCoreSettings(),
        overrides: (DeviceDescription, String) -> RoleOverrides? = { _, _ in nil },
        udevRole: (DeviceDescription) -> String? = { _ in nil }, controls: (any ControlsStage)? = nil
    ) {
        self.inputs = inputs
        self.settings = settings
        self.controls = controls
        profiles = RoleClassifier.pair(
            inputs.map { input in
                RoleClassifier.profile(
                    for: input.recording.description, node: input.node, udevRole: udevRole(input.recording.description),
                    config: overrides(input.recording.description, input.node))
            })
    }

    /// A frame of one recording, in merge order.
    struct Merged {
        var device: Int
        var sequence: Int
        var frame: Frame
    }

    /// Splits recordings into frames (``Frame/split(_:)``) and merges them by time (ties:
    /// file order, then recording order).
    static func frames(_ inputs: [ReplayInput]) -> [Merged] {
        var merged: [Merged] = []
        for (d, input) in inputs.enumerated() {
            for frame in Frame.split(input.recording.events) {
                merged.append(Merged(device: d, sequence: merged.count, frame: frame))
            }
        }
        merged.sort { ($0.frame.time, $0.device, $0.sequence) < ($1.frame.time, $1.device, $1.sequence) }
        return merged
    }

    /// Runs the whole replay, handing each event to `emit` in order.
    public mutating func run(_ emit: (PipelineEvent) -> Void) {
        let frames = Self.frames(inputs)
        let start = frames.first?.frame.time ?? Timestamp(microseconds: 0)
        var pipeline = Pipeline(settings: settings, controls: controls)
        let indices = profiles.map { pipeline.addDevice($0, at: start, emit) }
        pipeline.sessionStarted(at: start, emit)
        for m in frames {
            // The recording's clock is the pipeline's: a frame is read when it was written.
            pipeline.handle(m.frame, device: indices[m.device], now: m.frame.time, emit)
        }
        // End of input: pending deadlines fire, then every device goes.
        pipeline.fireDeadlines(through: nil, emit)
        let end = pipeline.clock
        for i in indices { pipeline.removeDevice(i, at: end, emit) }
        pipeline.sessionStopped(at: end, emit)
        controls = pipeline.controls
    }

    /// Runs the replay and returns its events.
    public mutating func run() -> [PipelineEvent] {
        var all: [PipelineEvent] = []
        run { all.append($0) }
        return all
    }
}
