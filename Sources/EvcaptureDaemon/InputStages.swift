import Actions
import Rig
import Vocabulary

/// A feature's part of the input path: what it does with each of the pipeline's events on
/// the input thread, in the same wake-up, before the sinks see the event
/// (docs/architecture.md#events-and-sinks). The daemon's state holds them in a fixed order
/// (libcamera's autofocus, the actions with the rig's fan-out) and knows nothing of what
/// each does. A stage hands work on (a queue, a control request, a publish) and returns at once.
protocol InputStage: AnyObject {
    func handle(_ event: PipelineEvent)
}

/// What capture events, session changes and the digital zoom mean to the actions: each
/// capture event's triggers (carrying the rig's decision on them, its trigger id) to the
/// runner's queues; the session's start and stop to the capture stream; a digital zoom's
/// value to the photos' crop, before any later capture event of the same wake-up.
final class ActionsStage: InputStage {
    /// The runner in use; another takes over when a camera appears (``DaemonState/cameraFound(_:)``).
    var runner: ActionRunner
    /// The station's fan-out to its rig (`[mqtt]`), decided before the station's own actions.
    var rig: RigFanOut?

    init(runner: ActionRunner) { self.runner = runner }

    func handle(_ event: PipelineEvent) {
        switch event {
        case .capture(let capture):
            let decision = rig?.decide(capture)
            for trigger in Self.triggers(for: capture, decision: decision) { runner.handle(trigger) }
        case .session(let change):
            switch change.state {
            case .started: runner.sessionChanged(running: true)
            case .stopped, .paused: runner.sessionChanged(running: false)
            case .cameraAdded: break
            }
        case .control(let report) where report.control?.binding.isDigitalZoom == true:
            runner.setDigitalZoom(report.change.value)
        default:
            break
        }
    }

    /// The actions' triggers of one capture event with the rig's decision on it: a press that
    /// is the rig's (it has a trigger id) is taken at its `began`, the instant its messages give
    /// the other stations (docs/mqtt.md#clocks), in monotonic time as it came; a press of
    /// this station alone has no rig moment, and its photo is the frame its `photo-frame` says.
    static func triggers(for capture: CaptureEvent, decision: FanOutPolicy.Decision?) -> [ActionTrigger] {
        ActionTrigger.triggers(for: capture).map { trigger in
            var trigger = trigger
            trigger.triggerID = decision?.trigger
            trigger.rigMoment = decision?.trigger == nil ? nil : capture.began
            return trigger
        }
    }
}

/// A libcamera camera with autofocus starts a cycle at a press's `began`, before the capture
/// its release or hold takes (docs/libcamera.md).
final class AutofocusAtPress: InputStage {
    let camera: LibcameraSource

    init(_ camera: LibcameraSource) { self.camera = camera }

    func handle(_ event: PipelineEvent) {
        if case .capture(let capture) = event, capture.phase == .began { camera.live.startAutofocus() }
    }
}
