import EvcaptureTesting
@testable import Capture
import Vocabulary

/// A compact, readable line per event: `120ms ended primary KEY_VOLUMEDOWN #1 click`.
func line(_ e: CaptureEvent) -> String {
    var s = "\(e.time.microseconds / 1000)ms \(e.phase.rawValue) \(e.action.rawValue) \(e.button.name) #\(e.press)"
    if e.shouldPlaySound { s += " sound" }
    if let g = e.gesture { s += " \(g.rawValue)" }
    if let r = e.reason { s += " (\(r.rawValue))" }
    return s
}

/// A scenario step: what the caller of the core does, at a time (ms) on the hand-driven clock.
enum Step {
    case start(Int)
    case stop(Int)
    case pause(Int)
    /// One frame: (code, value) events of one device.
    case frame(String, Int, [(EventCode, Int32)])
    /// The caller's timer fired.
    case advance(Int)
    case remove(String, Int)
    case lost(String, Int, [(EventCode, Int32)])

    static func down(_ dev: String, _ code: EventCode, _ t: Int) -> Step { .frame(dev, t, [(code, Int32(1))]) }
    static func up(_ dev: String, _ code: EventCode, _ t: Int) -> Step { .frame(dev, t, [(code, Int32(0))]) }
    static func autorepeat(_ dev: String, _ code: EventCode, _ t: Int) -> Step { .frame(dev, t, [(code, Int32(2))]) }
}

/// Runs steps through a core with the test devices added; returns one line per capture
/// event, and `Nms controls DEVICE` for each frame the core hands to the controls.
func run(
    _ steps: [Step], settings: CaptureCoreSettings = CaptureCoreSettings(),
    devices: [String: DeviceProfile] = [
        "gpio": TestDevices.gpio, "headset": TestDevices.headset, "knob": TestDevices.knob, "dial": TestDevices.dial,
    ],
    keysDownAtOpen: [String: [EventCode]] = [:]
) -> [String] {
    var core = CaptureCore(settings: settings)
    var ids: [String: CaptureDeviceID] = [:]
    for name in devices.keys.sorted() {
        ids[name] = core.addDevice(devices[name]!, keysDown: keysDownAtOpen[name] ?? [])
    }
    var out: [CaptureEvent] = []
    var lines: [String] = []
    for step in steps {
        switch step {
        case .start(let t): core.sessionStarted(now: ms(t), into: &out)
        case .stop(let t): core.sessionStopped(now: ms(t), into: &out)
        case .pause(let t): core.sessionPaused(now: ms(t), into: &out)
        case .advance(let t): core.advance(to: ms(t), into: &out)
        case .remove(let d, let t): core.removeDevice(ids[d]!, now: ms(t), into: &out)
        case .frame(let d, let t, let evs):
            let frame = evs.map { InputEvent(time: ms(t), $0.0, $0.1) } + [InputEvent(time: ms(t), .synReport, 0)]
            let forControls = core.handle(frame: frame, device: ids[d]!, now: ms(t), into: &out)
            lines += out.map(line)
            out.removeAll()
            if forControls { lines.append("\(t)ms controls \(d)") }
        case .lost(let d, let t, let changes):
            core.eventsLost(
                device: ids[d]!, changes: changes.map { InputEvent(time: ms(t), $0.0, $0.1) }, now: ms(t), into: &out)
        }
    }
    return lines + out.map(line)
}
