#if canImport(Glibc)
import Glibc
#endif
@testable import Camera
import EvcaptureDaemon
import EvcaptureTesting
import Foundation
@testable import LiveView
import Output
import Rig
import Testing
import Vocabulary

/// Every key of every JSON text the program writes is snake_case (docs/architecture.md#errors-and-habits,
/// "JSON"): the JSON lines of every pipeline event and action outcome (stdout, the socket, the
/// live view's `/events`, MQTT's event topics), `evcapture controls --json`, `evcapture devices
/// --json`, the state file, the live view's `/api/...` answers, trigger messages and Home
/// Assistant's discovery payloads. Each text is parsed (by Foundation, not by our own
/// decoder) and walked to its innermost object.
///
/// The samples cover every case: the `switch`es below have no `default`, so a new event,
/// outcome or error case does not compile until it is named here, and the test fails until
/// a sample of it is rendered.
struct JSONKeyCaseTests {
    /// What a key is, and which keys are one.
    enum KeyKind {
        /// A field's name: snake_case, `frame_time`.
        case field
        /// An event code by its kernel name, `KEY_VOLUMEDOWN`.
        case eventCode
        /// A system control by its name in `[controls] order`, `exposure-bias`.
        case controlName
        /// A device node, `/dev/video0`.
        case deviceNode

        func accepts(_ key: String) -> Bool {
            func parts(_ separator: Character, _ letter: (Character) -> Bool) -> Bool {
                let parts = key.split(separator: separator, omittingEmptySubsequences: false)
                guard let first = key.first, letter(first) else { return false }
                return parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { c in letter(c) || (c.isASCII && c.isNumber) } }
            }
            switch self {
            case .field: return parts("_") { $0.isASCII && $0.isLowercase }
            case .eventCode: return key.contains("_") && parts("_") { $0.isASCII && $0.isUppercase }
            case .controlName: return parts("-") { $0.isASCII && $0.isLowercase }
            case .deviceNode: return key.hasPrefix("/dev/") && !key.contains(where: \.isWhitespace)
            }
        }

        var what: String {
            switch self {
            case .field: "snake_case"
            case .eventCode: "an event code"
            case .controlName: "a control name"
            case .deviceNode: "a device node"
            }
        }
    }

    /// Objects whose keys are data, not field names, by the key they are under.
    static let maps: [String: KeyKind] = [
        // a device's roles, reasons, sources and steps by event code
        "roles": .eventCode, "reasons": .eventCode, "sources": .eventCode, "steps": .eventCode,
        // `evcapture controls --json`: the system controls' V4L2 controls, and the cameras passed over
        "bindings": .controlName, "rejected": .deviceNode,
    ]

    /// The keys of `text` (one JSON document) that break the rules, as `path: key`.
    static func badKeys(_ text: String) throws -> [String] {
        let document = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        var bad: [String] = []
        walk(document, path: "", keys: .field, into: &bad)
        return bad
    }

    static func walk(_ value: Any, path: String, keys kind: KeyKind, into bad: inout [String]) {
        if let object = value as? [String: Any] {
            for (key, inner) in object.sorted(by: { $0.key < $1.key }) {
                if !kind.accepts(key) { bad.append("\(path): \(key)" + (kind == .field ? "" : " (not \(kind.what))")) }
                walk(inner, path: path + "." + key, keys: kind == .field ? maps[key] ?? .field : .field, into: &bad)
            }
        } else if let array = value as? [Any] {
            for inner in array { walk(inner, path: path + "[]", keys: .field, into: &bad) }
        }
    }

    // MARK: every case

    enum PipelineCase: CaseIterable { case capture, device, session, control, controlsState, controlsConfigured, error }
    static func name(_ e: PipelineEvent) -> PipelineCase {
        switch e {
        case .capture: .capture
        case .device: .device
        case .session: .session
        case .control: .control
        case .controlsState: .controlsState
        case .controlsConfigured: .controlsConfigured
        case .error: .error
        }
    }

    enum OutcomeCase: CaseIterable {
        case photoSaved, videoStarted, videoSaved, videoRecovered, hookFinished, soundStarted, failed, skipped, countdown,
            countdownCancelled, shot, burstSaved, timelapse, triggerReceived
    }
    static func name(_ o: ActionOutcome) -> OutcomeCase {
        switch o {
        case .photoSaved: .photoSaved
        case .videoStarted: .videoStarted
        case .videoSaved: .videoSaved
        case .videoRecovered: .videoRecovered
        case .hookFinished: .hookFinished
        case .soundStarted: .soundStarted
        case .failed: .failed
        case .skipped: .skipped
        case .countdown: .countdown
        case .countdownCancelled: .countdownCancelled
        case .shot: .shot
        case .burstSaved: .burstSaved
        case .timelapse: .timelapse
        case .triggerReceived: .triggerReceived
        }
    }

    enum ErrorCase: CaseIterable { case camera, jpeg, file, video, noCamera, queueFull, hook, notRecording }
    static func name(_ e: ActionError) -> ErrorCase {
        switch e {
        case .recording(let r):
            switch r {
            case .camera: .camera
            case .jpeg: .jpeg
            case .file: .file
            case .video: .video
            }
        case .noCamera: .noCamera
        case .queueFull: .queueFull
        case .hook: .hook
        case .notRecording: .notRecording
        }
    }

    enum ScaleCase: CaseIterable { case continuous, discrete, index }
    static func name(_ s: ControlScale) -> ScaleCase {
        switch s {
        case .continuous: .continuous
        case .discrete: .discrete
        case .index: .index
        }
    }

    // MARK: samples, with every optional field filled and without

    static let t = Timestamp(microseconds: 12_345_678)
    static let keys = CaptureDevice(
        name: "AB Shutter3", node: "/dev/input/event5", bus: .bluetooth, vendor: 0x248a, product: 0x8266, uniq: "aa:bb")
    static let plainDevice = CaptureDevice(name: "gpio-keys", node: "/dev/input/event0", bus: .host)

    static var profile: DeviceProfile {
        let description = DeviceDescription(
            name: "Knob", bus: .usb, vendor: 0x077d, product: 0x0410, version: 1, uniq: "serial", phys: "usb-0000:00:14.0-1/input0",
            codes: [.volumeDown, .relDial, .synReport])
        var p = DeviceProfile(
            description: description, node: "/dev/input/event7",
            roles: [
                .volumeDown: RoleAssignment(role: .primary, source: .udev, reason: "EVCAPTURE_ROLE"),
                .relDial: RoleAssignment(role: .slider, source: .config, reason: "knob", step: -1, reading: .counter),
            ],
            isDedicated: true, kind: .knob, kindReason: "test", warnings: ["a warning"])
        p.partners = [DevicePartner(node: "/dev/input/event8", name: "Knob switch", relation: .pushSwitch, parent: "usb-1")]
        return p
    }

    static var controls: [Control] {
        [
            Control(name: "zoom", title: "Zoom", symbolName: "z", scale: .continuous(range: 1...4, prominentValues: [1, 2]), value: 1),
            Control(name: "ev", title: "EV", symbolName: "e", scale: .discrete(values: [-1, 0, 1]), value: 0),
            Control(name: "mode", title: "Mode", symbolName: "m", scale: .index(count: 2, wraps: true), value: 0, titles: ["a", "b"]),
            Control(
                name: "zoom", title: "Zoom", symbolName: "z", scale: .continuous(range: 1...4, prominentValues: []), value: 2,
                binding: .digitalZoom),
        ]
    }

    static var pipelineEvents: [PipelineEvent] {
        var events: [PipelineEvent] = []
        for phase in CapturePhase.allCases {
            events.append(
                .capture(CaptureEvent(phase: phase, action: .primary, button: .volumeDown, device: keys, press: 1, time: t)))
        }
        for gesture in Gesture.allCases {
            events.append(
                .capture(
                    CaptureEvent(
                        phase: .ended, action: .secondary, button: .volumeDown, device: keys, press: 2, time: t, shouldPlaySound: true,
                        gesture: gesture)))
        }
        for reason in CancelReason.allCases {
            events.append(
                .capture(
                    CaptureEvent(
                        phase: .cancelled, action: .primary, button: .volumeDown, device: plainDevice, press: 3, time: t, reason: reason)))
        }
        events += [
            .device(DeviceChange(kind: .added, device: keys, profile: profile, time: t)),
            .device(DeviceChange(kind: .removed, device: plainDevice, time: t)),
            .session(SessionChange(.started, time: t)),
            .session(SessionChange(.cameraAdded, reason: "plugged", camera: "vivid", cameraNode: "/dev/video0", time: t)),
            .controlsConfigured(controls: ["zoom", "exposure-bias"], current: "zoom", time: t),
            .controlsConfigured(controls: [], current: nil, time: t),
            .error(ErrorReport("no camera", code: "no-camera", press: 4, time: t)),
            .error(ErrorReport("plain", time: t)),
        ]
        for change in ControlsStateChange.allCases {
            events.append(.controlsState(change, control: "zoom", time: t))
            events.append(.controlsState(change, control: nil, time: t))
        }
        for control in controls {
            events.append(
                .control(
                    ControlReport(
                        change: ControlValueChange(control: control.name, value: 2, raw: 200, origin: .person, time: t), control: control)))
        }
        events.append(
            .control(ControlReport(change: ControlValueChange(control: "zoom", value: 1, origin: .external, time: t), control: nil)))
        return events
    }

    static let photo = PhotoResult(
        path: "/o/a.jpg", width: 640, height: 480, bytes: 100, frameTime: t, sequence: 7, trigger: "take-1", pressOffset: -20_000)
    static let plainPhoto = PhotoResult(path: "/o/b.jpg", width: 640, height: 480, bytes: 100)

    static var errors: [ActionError] {
        [
            .recording(.camera(SystemError(code: .deviceRemoved, errno: ENODEV, context: "reading /dev/video0"))),
            .recording(.jpeg(JPEGError("bad frame"))),
            .recording(.file(SystemError(errno: ENOSPC, context: "writing /o/a.jpg"))),
            .recording(.video(SystemError(code: .failed, context: "encoder"))),
            .noCamera, .queueFull(kind: "photo", press: 5), .hook(name: "h", problem: "not found"), .notRecording(press: 6),
        ]
    }

    static var outcomes: [ActionOutcome] {
        let video = VideoResult(
            path: "/o/v.mp4", frames: 61, framesPerSecond: 30, width: 640, height: 480, truncated: true, frameTime: t, skipped: 2,
            undecodable: 1, format: .mp4, encoder: "libx264", duration: 2.03,
            stoppedBy: .file(SystemError(errno: ENOSPC, context: "writing")), trigger: "take-2")
        var outcomes: [ActionOutcome] = [
            .photoSaved(photo, press: 1), .photoSaved(plainPhoto, press: .remote),
            .videoStarted(press: 2, trigger: "take-2"), .videoStarted(press: 2, trigger: nil),
            .videoSaved(video, press: 2),
            .videoSaved(VideoResult(path: "/o/w.avi", frames: 1, framesPerSecond: 30, width: 1, height: 1, truncated: false), press: 3),
            .videoRecovered(RecoveredVideo(path: "/o/v.mp4", temporaryName: ".evcapture-x~v.mp4.part", format: .mp4, frames: 3)),
            .hookFinished(name: "upload", ChildOutcome(exitStatus: 0, timedOut: false, output: "ok"), press: 1),
            .hookFinished(name: "slow", ChildOutcome(signal: 9, timedOut: true, output: ""), press: 1),
            .soundStarted(file: "/usr/share/sounds/shutter.oga", press: 1),
            .skipped("video", press: 1, reason: "busy"),
            .countdown(remaining: 3, shot: t + .seconds(3), press: 1),
            .countdownCancelled(remaining: 2, press: 1),
            .shot(time: t, press: 1), .shot(time: t, press: .remote),
            .burstSaved([photo, plainPhoto], press: 1), .burstSaved([], press: 1),
            .triggerReceived(.photo, trigger: "take-3", topic: "evcapture/all/trigger"),
        ]
        for error in errors {
            outcomes.append(.failed(error, press: 1))
            outcomes.append(.failed(error, press: nil))
        }
        for state in TimelapseReport.State.allCases {
            outcomes.append(.timelapse(TimelapseReport(state: state, press: 1, count: 2, missed: 1, next: t + .seconds(10), photo: photo)))
            outcomes.append(.timelapse(TimelapseReport(state: state, press: 1, count: 0, missed: 0)))
        }
        return outcomes
    }

    // MARK: the tests

    @Test func theSamplesCoverEveryCase() {
        #expect(Set(Self.pipelineEvents.map(Self.name)) == Set(PipelineCase.allCases))
        #expect(Set(Self.outcomes.map(Self.name)) == Set(OutcomeCase.allCases))
        #expect(Set(Self.errors.map(Self.name)) == Set(ErrorCase.allCases))
        #expect(Set(Self.controls.map { Self.name($0.scale) }) == Set(ScaleCase.allCases))
    }

    /// Every text the program writes, with where it goes.
    static var texts: [(what: String, text: String)] {
        var texts: [(String, String)] = []
        for e in pipelineEvents { texts.append(("line of \(name(e))", JSONLines.line(e))) }
        for o in outcomes { texts.append(("line of \(name(o))", JSONLines.outcome(o, time: t))) }

        // evcapture controls --json: a camera with its controls, and none with the cameras passed over.
        let withCamera = CameraControlsReport(
            camera: .init(device: "/dev/video0", identity: "usb-1", card: "Cam", driver: "uvcvideo", busInfo: "usb-0000:00:14.0-1"),
            controls: [
                .init(
                    id: "0x009a090d", name: "zoom_absolute", title: "Zoom, Absolute", type: "int", minimum: 100, maximum: 500, step: 1,
                    default: 100, value: 100, flags: [], menu: nil, binds: "zoom"),
                .init(
                    id: "0x009a0901", name: "auto_exposure", title: "Auto Exposure", type: "menu", minimum: 0, maximum: 3, step: 1,
                    default: 3, value: nil, flags: ["volatile"],
                    menu: [.init(index: 1, name: "Manual Mode", value: nil), .init(index: 3, name: "Aperture", value: 3)],
                    binds: nil),
            ],
            bindings: .init(zoom: "zoom_absolute", exposureBias: "auto_exposure_bias"), problem: nil, rejected: [:])
        texts.append(("evcapture controls --json", JSONLines.controlsReport(withCamera, time: t)))
        let none = CameraControlsReport(
            camera: nil, controls: [], bindings: .init(zoom: nil, exposureBias: nil), problem: "no camera",
            rejected: ["/dev/video0": "not a capture device", "/dev/v4l/by-id/usb-cam": "busy"])
        texts.append(("evcapture controls --json, no camera", JSONLines.controlsReport(none, time: t)))

        // evcapture devices --json
        let report = DeviceReport(profile: profile, udevRole: "knob")
        texts.append(("evcapture devices --json", report.json.pretty))
        texts.append(("evcapture devices --json, a bare device", DeviceReport(profile: Self.bareProfile, udevRole: nil).json.encoded))

        // The live view's API.
        texts.append(("GET /api/media", MediaDirectory.json([.init(name: "a.jpg", bytes: 1, modified: 1_764_000_000, kind: "photo")])))
        texts.append(("GET /api/media, empty", MediaDirectory.json([])))
        texts.append(("POST /api/input", HTTPConnection.accepted))

        // MQTT: trigger messages and Home Assistant's discovery (its own keys, snake_case too).
        for command in CaptureCommand.allCases {
            texts.append(("trigger message", TriggerMessage(command: command, trigger: "take-4", time: 1_764_000_000.5, from: "a").json))
            texts.append(("trigger message, bare", TriggerMessage(command: command).json))
        }
        let discovery = HomeAssistantDiscovery(
            RigSettings(station: "booth"),
            links: StationLinks(page: "http://booth:8080/", mjpeg: "http://booth:8080/stream.mjpg", rtsp: "rtsp://booth:8554/live"))
        for m in discovery?.messages ?? [] { texts.append(("discovery \(m.topic)", String(decoding: m.payload, as: UTF8.self))) }
        return texts
    }

    static var bareProfile: DeviceProfile {
        DeviceProfile(
            description: DeviceDescription(name: "bare", bus: .virtual, codes: [.synReport]), node: "/dev/input/event9", roles: [:])
    }

    @Test func everyKeyOfEveryTextIsSnakeCase() throws {
        let texts = Self.texts
        #expect(texts.count > 100)
        for (what, text) in texts {
            let bad = try Self.badKeys(text)
            #expect(bad.isEmpty, "\(what): \(bad)\n\(text)")
        }
        // The state file, as it is written.
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ControlStateFile(path: dir + "/state.json").save(currentControl: "exposure-bias")
        let state = try String(contentsOfFile: dir + "/state.json", encoding: .utf8)
        #expect(try Self.badKeys(state).isEmpty, "\(state)")
        // Every discovery config, and the live view's addresses, were there to look at.
        #expect(texts.filter { $0.what.hasPrefix("discovery ") }.count == 1 + 2 * 3 + 3 + 1 + 1)
    }

    /// The check itself: a key of another case, anywhere in a text, is found.
    @Test func aKeyOfAnotherCaseIsFound() throws {
        #expect(try Self.badKeys(#"{"event":"capture","frame_time":1}"#).isEmpty)
        #expect(try Self.badKeys(#"{"event":"capture","frameTime":1}"#) == [": frameTime"])
        #expect(try Self.badKeys(#"{"a":[{"b":{"Paired-With":1}}]}"#) == [".a[].b: Paired-With"])
        #expect(try Self.badKeys(#"{"x_":1,"_y":2,"z__z":3,"ok_2":4}"#) == [": _y", ": x_", ": z__z"])
        // Inside a map its keys are data of their kind, and what is inside them is checked again.
        #expect(
            try Self.badKeys(#"{"roles":{"KEY_VOLUMEDOWN":"primary","keyVolumeUp":"secondary"}}"#) == [
                ".roles: keyVolumeUp (not an event code)"
            ])
        #expect(
            try Self.badKeys(#"{"bindings":{"exposure-bias":null,"exposureBias":null}}"#) == [
                ".bindings: exposureBias (not a control name)"
            ])
        #expect(try Self.badKeys(#"{"rejected":{"/dev/video0":{"whyNot":1}}}"#) == [".rejected./dev/video0: whyNot"])
    }
}
