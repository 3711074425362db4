#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import Vocabulary
import LinuxIO

/// What happened, as actions see it: a capture phase, a gesture, or a finished file.
///
/// This is the actions' own view of an event (the capture core's event type is mapped onto
/// it where the daemon is wired), so actions stay usable on their own.
public struct ActionTrigger: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable, Codable {
        case began, ended, cancelled
        case click
        case longPress = "long-press"
        case doubleClick = "double-click"
        /// A photo was written (`file` is set).
        case photo
        /// A video was written (`file` is set).
        case video
        /// A countdown second (`remaining` is set; docs/booth.md#countdown).
        case countdown
    }

    public var kind: Kind
    /// Which button's binding it follows; nil for a trigger message from another station
    /// (named `remote` in file names, hooks and lines: ``ActionTrigger/actionName(_:)``).
    public var action: CaptureAction?
    /// The key name, e.g. `KEY_VOLUMEDOWN`.
    public var button: String
    public var deviceName: String
    public var deviceNode: String
    public var press: PressID
    /// When it happened (CLOCK_MONOTONIC, as every time actions keep): a capture event's
    /// kernel time, a trigger message's arrival, a booth step's, a file's writing. Seconds
    /// since 1970 only where a person or a program reads it: `EVCAPTURE_TIME`, and a file's
    /// name (of ``pressMoment``).
    public var time: Timestamp
    /// Why a press was cancelled.
    public var reason: String?
    /// The written file for `photo` and `video`.
    public var file: String?
    /// A Bluetooth headset press: the shutter sound is played for it.
    public var shouldPlaySound: Bool
    /// The press's `began` kernel time (CLOCK_MONOTONIC): the capture event's ``CaptureEvent/began``
    /// for a local press; for a booth's shot, its moment; nil for a trigger message.
    public var pressTime: Timestamp?
    /// For `photo` and `video`: the (first) frame's kernel time (CLOCK_MONOTONIC).
    public var frameTime: Timestamp?
    /// The trigger id shared by every station's file of one moment (MQTT fan-out or a
    /// trigger message); nil for a plain local press.
    public var triggerID: String?
    /// For a rig's press: the moment every station takes its frame nearest to (CLOCK_MONOTONIC)
    /// — this station's own fanned-out press's `began`, or a trigger message's press time,
    /// moved from the wall clock once, as the message arrives (docs/mqtt.md#clocks). nil
    /// for a press of this station alone, whose moment is its `photo-frame`'s.
    public var rigMoment: Timestamp?
    /// For `countdown`: whole seconds to the shot.
    public var remaining: Int?

    /// The press's moment (CLOCK_MONOTONIC): its `began` (``pressTime``, a booth shot's
    /// moment), else the rig's moment, else the trigger's own time (a trigger message's
    /// arrival). A video starts there, and a file's name carries it, converted to the wall
    /// clock once (docs/configuration.md#output).
    public var pressMoment: Timestamp { pressTime ?? rigMoment ?? time }

    public init(
        kind: Kind, action: CaptureAction?, button: String, deviceName: String, deviceNode: String, press: PressID,
        time: Timestamp, reason: String? = nil, file: String? = nil, shouldPlaySound: Bool = false,
        pressTime: Timestamp? = nil, triggerID: String? = nil, rigMoment: Timestamp? = nil
    ) {
        self.pressTime = pressTime
        self.kind = kind
        self.action = action
        self.button = button
        self.deviceName = deviceName
        self.deviceNode = deviceNode
        self.press = press
        self.time = time
        self.reason = reason
        self.file = file
        self.shouldPlaySound = shouldPlaySound
        self.triggerID = triggerID
        self.rigMoment = rigMoment
    }

    /// How `action` is written where a name is needed: the button's action, or `remote`.
    static func actionName(_ action: CaptureAction?) -> String { CaptureAction.name(action) }

    /// The capture phase this trigger belongs to (gestures: click ends a press, a long press
    /// is reported while held).
    public var phase: String? {
        switch kind {
        case .began, .longPress: "began"
        case .ended, .click, .doubleClick: "ended"
        case .cancelled: "cancelled"
        case .photo, .video, .countdown: nil
        }
    }

    /// `EVCAPTURE_*` variables describing the trigger, for hooks.
    public var environment: [String: String] {
        var env: [String: String] = [
            "EVCAPTURE_EVENT": kind.rawValue,
            "EVCAPTURE_ACTION": Self.actionName(action),
            "EVCAPTURE_BUTTON": button,
            "EVCAPTURE_DEVICE": deviceName,
            "EVCAPTURE_DEVICE_NODE": deviceNode,
            "EVCAPTURE_PRESS": String(press.rawValue),
            "EVCAPTURE_TIME": String(cFormat: "%.6f", time.wallSeconds),
            "EVCAPTURE_SOUND": shouldPlaySound ? "1" : "0",
        ]
        if let phase { env["EVCAPTURE_PHASE"] = phase }
        switch kind {
        case .click, .longPress, .doubleClick: env["EVCAPTURE_GESTURE"] = kind.rawValue
        default: break
        }
        if let reason { env["EVCAPTURE_REASON"] = reason }
        if let file { env["EVCAPTURE_FILE"] = file }
        // The frame's kernel time, the clock of EVCAPTURE_* capture events' `time` in JSON.
        if let frameTime { env["EVCAPTURE_FRAME_TIME"] = frameTime.description }
        if let triggerID { env["EVCAPTURE_TRIGGER"] = triggerID }
        if let remaining { env["EVCAPTURE_REMAINING"] = String(remaining) }
        return env
    }
}

/// A program run for capture events: an argv list (never a shell string), the event in
/// `EVCAPTURE_*` environment variables, killed after `timeout`, output logged line by line.
public struct ExecHook: Sendable, Hashable {
    /// For logs and errors.
    public var name: String
    /// `argv[0]` is a path, or a name looked up in `PATH`.
    public var argv: [String]
    /// Which triggers run it.
    public var on: Set<ActionTrigger.Kind>
    /// Which actions (`primary`, `secondary`) run it; nil for all.
    public var actions: Set<CaptureAction>?
    public var timeout: Duration

    public init(
        name: String? = nil, argv: [String], on: Set<ActionTrigger.Kind>, actions: Set<CaptureAction>? = nil,
        timeout: Duration = .seconds(10)
    ) {
        precondition(!argv.isEmpty, "a hook needs a program")
        self.name = name ?? argv[0]
        self.argv = argv
        self.on = on
        self.actions = actions
        self.timeout = timeout
    }

    public func matches(_ trigger: ActionTrigger) -> Bool {
        on.contains(trigger.kind) && (actions.map { a in trigger.action.map(a.contains) ?? false } ?? true)
    }

    /// Runs the hook on a thread of its own and waits for it. The environment is
    /// `baseEnvironment` (default: the daemon's) plus the trigger's `EVCAPTURE_*` variables.
    public func run(
        for trigger: ActionTrigger, baseEnvironment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger
    ) async -> Result<ChildOutcome, ActionError> {
        let env = baseEnvironment.merging(trigger.environment) { _, new in new }
        let hook = self
        return await onDedicatedThread(name: "evcapture-hook") { () -> Result<ChildOutcome, ActionError> in
            let child: ChildProcess
            do {
                child = try ChildProcess.spawn(argv: hook.argv, environment: env, searchPath: env["PATH"])
            } catch let e as ActionError { return .failure(e) } catch { return .failure(.hook(name: hook.name, problem: "\(error)")) }
            var log = logger
            log[metadataKey: "hook.name"] = "\(hook.name)"
            log[metadataKey: "hook.pid"] = "\(child.pid)"
            let outcome = child.wait(timeout: hook.timeout) { line in log.info("\(line)") }
            if !outcome.succeeded {
                return .failure(.hook(name: hook.name, problem: outcome.description))
            }
            return .success(outcome)
        }
    }
}
