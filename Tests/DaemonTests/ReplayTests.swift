import EvcaptureTesting
@testable import Capture
import Evdev
import Vocabulary
import Foundation
import Testing
import EvcaptureDaemon
import Camera
import Output
import ConfigFile

func fixture(_ name: String) -> String { Fixtures.path(name) }

/// `time phase action button #press [sound] [gesture] [(reason)]` — the capture events of a replay.
func captureLines(_ outputs: [PipelineEvent]) -> [String] {
    outputs.compactMap(\.captureEvent).map { e in
        var s = "\(e.time) \(e.phase.rawValue) \(e.action.rawValue) \(e.button.name) #\(e.press)"
        if e.shouldPlaySound { s += " sound" }
        if let g = e.gesture { s += " \(g.rawValue)" }
        if let r = e.reason { s += " (\(r.rawValue))" }
        return s
    }
}

func replay(_ names: [String], config: Config = Config(), controls: (any ControlsStage)? = nil) throws
    -> [PipelineEvent]
{
    var pipeline = ReplayPipeline(inputs: try ReplayInput.load(paths: names.map(fixture)), config: config, controls: controls)
    return pipeline.run()
}

/// Writes a temporary file; returns its path.
func temporaryFile(_ name: String, _ text: String) throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evcapture-tests-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let url = dir.appendingPathComponent(name)
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url.path
}

/// A fixture's text with its `E:` lines replaced.
func recording(basedOn name: String, events: [String]) throws -> String {
    let text = try String(contentsOfFile: fixture(name), encoding: .utf8)
    let head = text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("E:") }
    return (head + events.map { Substring($0) }).joined(separator: "\n") + "\n"
}

@Suite struct ReplayTests {
    /// Every fixture and the capture events its replay must give (docs/behaviour.md#press-lifecycle,
    /// default roles of docs/behaviour.md#roles:
    /// no secondary handler, so KEY_VOLUMEUP reports as primary; hold threshold 0.5 s).
    static let expected: [(String, [String])] = [
        (
            "gpio-keys-volume-keys.evemu",
            [
                "0.000001 began primary KEY_VOLUMEDOWN #1",
                "0.120001 ended primary KEY_VOLUMEDOWN #1 click",
                "1.000001 began primary KEY_VOLUMEDOWN #2",
                "1.500001 held primary KEY_VOLUMEDOWN #2 long-press",
                "2.400001 ended primary KEY_VOLUMEDOWN #2",
                "3.200001 began primary KEY_VOLUMEUP #3",
                "3.310001 ended primary KEY_VOLUMEUP #3 click",
            ]
        ),
        (
            "thinkpad-extra-buttons-camera.evemu",
            [
                "0.000001 began primary KEY_CAMERA #1",
                "0.150001 ended primary KEY_CAMERA #1 click",
                "1.500001 began primary KEY_CAMERA #2",
                "2.000001 held primary KEY_CAMERA #2 long-press",
                "2.700001 ended primary KEY_CAMERA #2",
            ]
        ),
        (
            // A volume wheel on a Consumer Control node: without a `knob` role (config or
            // udev) its detents are volume-key clicks.
            "logitech-media-keyboard-elite-volume-wheel.evemu",
            [
                "0.000001 began primary KEY_VOLUMEUP #1", "0.008001 ended primary KEY_VOLUMEUP #1 click",
                "0.060001 began primary KEY_VOLUMEUP #2", "0.068001 ended primary KEY_VOLUMEUP #2 click",
                "0.120001 began primary KEY_VOLUMEUP #3", "0.128001 ended primary KEY_VOLUMEUP #3 click",
                "0.180001 began primary KEY_VOLUMEUP #4", "0.188001 ended primary KEY_VOLUMEUP #4 click",
                "0.940001 began primary KEY_VOLUMEDOWN #5", "0.948001 ended primary KEY_VOLUMEDOWN #5 click",
                "1.000001 began primary KEY_VOLUMEDOWN #6", "1.008001 ended primary KEY_VOLUMEDOWN #6 click",
            ]
        ),
        ("huion-q620m-dial.evemu", []),  // slider and light-press only
        (
            // Headset presses play the sound; KEY_NEXTSONG has no capture role.
            "bluez-avrcp-headset.evemu",
            [
                "0.000001 began primary KEY_PLAYCD #1 sound",
                "0.120001 ended primary KEY_PLAYCD #1 sound click",
                "2.000001 began primary KEY_PAUSECD #2 sound",
                "2.120001 ended primary KEY_PAUSECD #2 sound click",
            ]
        ),
        ("rotary-encoder-rel-x.evemu", []),
        ("rotary-encoder-push-switch-gpio-keys.evemu", []),  // KEY_ENTER is the encoder's light press
        ("griffin-powermate.evemu", []),
        ("contour-shuttlexpress-jog.evemu", []),  // its buttons have no role unless configured
        (
            // A full keyboard: typing "ab" is nothing, its volume key counts.
            "usb-keyboard-typing-and-volume.evemu",
            ["0.800001 began primary KEY_VOLUMEUP #1", "0.900001 ended primary KEY_VOLUMEUP #1 click"]
        ),
    ]

    @Test func everyFixtureIsCovered() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Fixtures.directory).filter { $0.hasSuffix(".evemu") }
        #expect(Set(files) == Set(Self.expected.map(\.0)))
    }

    @Test(arguments: expected)
    func fixtureReplaysToTheExpectedCaptureEvents(file: String, lines: [String]) throws {
        #expect(captureLines(try replay([file])) == lines)
    }

    @Test func theJSONLinesOfAReplay() throws {
        let json = try replay(["gpio-keys-volume-keys.evemu"]).map(\.json)
        let node = "\"node\":\"gpio-keys-volume-keys.evemu\""
        let dev = "\"device\":\"gpio-keys\",\(node)"
        #expect(
            json == [
                "{\"event\":\"device\",\"change\":\"added\",\(dev),\"bus\":\"host\",\"vendor\":\"0001\",\"product\":\"0001\",\"roles\":{\"KEY_VOLUMEDOWN\":\"primary\",\"KEY_VOLUMEUP\":\"secondary\"},\"time\":0.000001}",
                "{\"event\":\"session\",\"state\":\"started\",\"time\":0.000001}",
                "{\"event\":\"capture\",\"phase\":\"began\",\"action\":\"primary\",\"button\":\"KEY_VOLUMEDOWN\",\(dev),\"press\":1,\"sound\":false,\"time\":0.000001}",
                "{\"event\":\"capture\",\"phase\":\"ended\",\"action\":\"primary\",\"button\":\"KEY_VOLUMEDOWN\",\(dev),\"press\":1,\"sound\":false,\"gesture\":\"click\",\"time\":0.120001}",
                "{\"event\":\"capture\",\"phase\":\"began\",\"action\":\"primary\",\"button\":\"KEY_VOLUMEDOWN\",\(dev),\"press\":2,\"sound\":false,\"time\":1.000001}",
                "{\"event\":\"capture\",\"phase\":\"held\",\"action\":\"primary\",\"button\":\"KEY_VOLUMEDOWN\",\(dev),\"press\":2,\"sound\":false,\"gesture\":\"long-press\",\"time\":1.500001}",
                "{\"event\":\"capture\",\"phase\":\"ended\",\"action\":\"primary\",\"button\":\"KEY_VOLUMEDOWN\",\(dev),\"press\":2,\"sound\":false,\"time\":2.400001}",
                "{\"event\":\"capture\",\"phase\":\"began\",\"action\":\"primary\",\"button\":\"KEY_VOLUMEUP\",\(dev),\"press\":3,\"sound\":false,\"time\":3.200001}",
                "{\"event\":\"capture\",\"phase\":\"ended\",\"action\":\"primary\",\"button\":\"KEY_VOLUMEUP\",\(dev),\"press\":3,\"sound\":false,\"gesture\":\"click\",\"time\":3.310001}",
                "{\"event\":\"device\",\"change\":\"removed\",\(dev),\"bus\":\"host\",\"vendor\":\"0001\",\"product\":\"0001\",\"time\":3.310001}",
                "{\"event\":\"session\",\"state\":\"stopped\",\"time\":3.310001}",
            ])
    }

    @Test func framesOfSeveralFilesAreMergedByTime() throws {
        let out = try replay(["gpio-keys-volume-keys.evemu", "bluez-avrcp-headset.evemu"])
        #expect(
            captureLines(out) == [
                "0.000001 began primary KEY_VOLUMEDOWN #1",
                "0.000001 began primary KEY_PLAYCD #2 sound",
                "0.120001 ended primary KEY_VOLUMEDOWN #1 click",
                "0.120001 ended primary KEY_PLAYCD #2 sound click",
                "1.000001 began primary KEY_VOLUMEDOWN #3",
                "1.500001 held primary KEY_VOLUMEDOWN #3 long-press",
                "2.000001 began primary KEY_PAUSECD #4 sound",
                "2.120001 ended primary KEY_PAUSECD #4 sound click",
                "2.400001 ended primary KEY_VOLUMEDOWN #3",
                "3.200001 began primary KEY_VOLUMEUP #5",
                "3.310001 ended primary KEY_VOLUMEUP #5 click",
            ])
        // The headset's last frame (KEY_NEXTSONG up at 4.120001) ends the replay.
        #expect(out.last?.json == "{\"event\":\"session\",\"state\":\"stopped\",\"time\":4.120001}")
    }

    @Test func configDecidesRoutingThresholdsAndRoles() throws {
        var config = try Config.parse(
            """
            [capture]
            hold-threshold = 1.0
            secondary-handler = true
            """, file: "test.toml")
        #expect(
            captureLines(try replay(["gpio-keys-volume-keys.evemu"], config: config)) == [
                "0.000001 began primary KEY_VOLUMEDOWN #1",
                "0.120001 ended primary KEY_VOLUMEDOWN #1 click",
                "1.000001 began primary KEY_VOLUMEDOWN #2",
                "2.000001 held primary KEY_VOLUMEDOWN #2 long-press",
                "2.400001 ended primary KEY_VOLUMEDOWN #2",
                "3.200001 began secondary KEY_VOLUMEUP #3",
                "3.310001 ended secondary KEY_VOLUMEUP #3 click",
            ])
        // The encoder's push switch made a shutter button by config.
        config = try Config.parse(
            """
            [devices."gpio-keys"]
            roles = { KEY_ENTER = "primary" }
            """, file: "test.toml")
        #expect(
            captureLines(try replay(["rotary-encoder-push-switch-gpio-keys.evemu"], config: config)) == [
                "0.000001 began primary KEY_ENTER #1",
                "0.150001 ended primary KEY_ENTER #1 click",
                "1.500001 began primary KEY_ENTER #2",
                "2.000001 held primary KEY_ENTER #2 long-press",
                "2.300001 ended primary KEY_ENTER #2",
            ])
        // The volume wheel declared a knob: no capture events any more.
        config = try Config.parse(
            """
            [devices."Logitech Logitech USB Keyboard Consumer Control"]
            kind = "knob"
            """, file: "test.toml")
        #expect(captureLines(try replay(["logitech-media-keyboard-elite-volume-wheel.evemu"], config: config)) == [])
    }

    /// Every match key applies in a replay, as for a live device (it used to be names only).
    @Test func rulesMatchedByVendorProductBusOrUniqApply() throws {
        for match in ["vendor = \"046d\"\nproduct = 0x030f", "bus = 3", "vendor = 0x046d"] {
            let config = try Config.parse("[devices.wheel]\n\(match)\nkind = \"knob\"\n", file: "t.toml")
            #expect(captureLines(try replay(["logitech-media-keyboard-elite-volume-wheel.evemu"], config: config)) == [], "\(match)")
        }
        // A rule for another product leaves the keys as capture buttons.
        let other = try Config.parse("[devices.wheel]\nvendor = \"046d\"\nproduct = 0x0310\nkind = \"knob\"\n", file: "t.toml")
        #expect(captureLines(try replay(["logitech-media-keyboard-elite-volume-wheel.evemu"], config: other)).count == 12)
    }

    @Test func doubleClickFromConfig() throws {
        let config = try Config.parse("[capture]\ndouble-click = true\ndouble-click-window = 0.1\n", file: "t.toml")
        // Wheel taps 60 ms apart: the 2nd and 4th are double clicks (a third starts over).
        #expect(
            captureLines(try replay(["logitech-media-keyboard-elite-volume-wheel.evemu"], config: config))
                .filter { $0.contains("ended") } == [
                    "0.008001 ended primary KEY_VOLUMEUP #1 click",
                    "0.068001 ended primary KEY_VOLUMEUP #2 double-click",
                    "0.128001 ended primary KEY_VOLUMEUP #3 click",
                    "0.188001 ended primary KEY_VOLUMEUP #4 double-click",
                    "0.948001 ended primary KEY_VOLUMEDOWN #5 click",
                    "1.008001 ended primary KEY_VOLUMEDOWN #6 double-click",
                ])
    }

    @Test func atTheEndPendingDeadlinesFireThenPressesInFlightAreCancelled() throws {
        let text = try recording(
            basedOn: "gpio-keys-volume-keys.evemu",
            events: [
                "E: 0.000001 0001 0072 0001", "E: 0.000001 0000 0000 0000",
                "E: 0.200001 0001 0073 0001", "E: 0.200001 0000 0000 0000",
                "E: 0.300001 0001 0073 0000",  // no SYN_REPORT: never reached a reader
            ])
        var pipeline = ReplayPipeline(inputs: [
            ReplayInput(path: "held.evemu", recording: try EvemuRecording.parse(text, file: "held.evemu"))
        ])
        let out = pipeline.run()
        #expect(
            captureLines(out) == [
                "0.000001 began primary KEY_VOLUMEDOWN #1",
                "0.200001 began primary KEY_VOLUMEUP #2",
                "0.500001 held primary KEY_VOLUMEDOWN #1 long-press",
                "0.700001 held primary KEY_VOLUMEUP #2 long-press",
                "0.700001 cancelled primary KEY_VOLUMEDOWN #1 (device-removed)",
                "0.700001 cancelled primary KEY_VOLUMEUP #2 (device-removed)",
            ])
        #expect(out.suffix(2).map(\.json).first!.contains("\"change\":\"removed\""))
    }

    @Test func synDroppedInARecordingCancelsThePressAsLostEvents() throws {
        let text = try recording(
            basedOn: "gpio-keys-volume-keys.evemu",
            events: [
                "E: 0.000001 0001 0072 0001", "E: 0.000001 0000 0000 0000",
                "E: 0.100001 0000 0003 0000",  // SYN_DROPPED
                "E: 0.150001 0001 0072 0000", "E: 0.150001 0000 0000 0000",  // dropped with its frame
                "E: 0.300001 0001 0072 0000", "E: 0.300001 0000 0000 0000",  // release of an ignored key
                "E: 0.400001 0001 0072 0001", "E: 0.400001 0000 0000 0000",
                "E: 0.450001 0001 0072 0000", "E: 0.450001 0000 0000 0000",
            ])
        var pipeline = ReplayPipeline(inputs: [
            ReplayInput(path: "lost.evemu", recording: try EvemuRecording.parse(text, file: "lost.evemu"))
        ])
        #expect(
            captureLines(pipeline.run()) == [
                "0.000001 began primary KEY_VOLUMEDOWN #1",
                "0.100001 cancelled primary KEY_VOLUMEDOWN #1 (events-lost)",
                "0.400001 began primary KEY_VOLUMEDOWN #2",
                "0.450001 ended primary KEY_VOLUMEDOWN #2 click",
            ])
    }

    /// A stand-in for the controls core: records what the seam hands it.
    final class RecordingControls: ControlsStage {
        var log: [String] = []
        var deadline: Timestamp? = nil
        func deviceAdded(_ profile: DeviceProfile, index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
            log.append("added \(index) \(profile.description.name)")
        }
        func handle(frame: [InputEvent], device index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
            log.append(
                "\(now) frame of \(frame.count) from \(index): "
                    + frame.filter { $0.type != .syn }.map { "\($0.eventCode.name) \($0.value)" }.joined(separator: ", "))
            if deadline == nil { deadline = now + .milliseconds(100) }
            emit(.controlsState(.becameActive, control: nil, time: now))
        }
        func observe(frame: [InputEvent], device index: Int) {
            log.append("observed frame of \(frame.count) from \(index)")
        }
        func eventsLost(device index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {}
        var nextDeadline: Timestamp? { deadline }
        func advance(to now: Timestamp, _ emit: (PipelineEvent) -> Void) {
            log.append("\(now) deadline")
            deadline = nil
            emit(.controlsState(.becameInactive, control: nil, time: now))
        }
        func deviceRemoved(index: Int, at now: Timestamp, _ emit: (PipelineEvent) -> Void) {
            log.append("\(now) removed \(index)")
        }
    }

    @Test func sliderAndLightPressFramesReachTheControlsSeamOnTheSameClock() throws {
        let stage = RecordingControls()
        var pipeline = ReplayPipeline(
            inputs: try ReplayInput.load(paths: [fixture("griffin-powermate.evemu")]), controls: stage)
        let out = pipeline.run()
        let log = stage.log
        #expect(
            log == [
                "added 0 Griffin PowerMate",
                "0.000001 frame of 1 from 0: BTN_0 1",
                "0.100001 deadline",
                "0.180001 frame of 1 from 0: BTN_0 0",
                "0.280001 deadline",
                "0.600001 frame of 1 from 0: REL_DIAL 1",
                "0.630001 frame of 1 from 0: REL_DIAL 1",
                "0.660001 frame of 1 from 0: REL_DIAL 1",
                "0.690001 frame of 1 from 0: REL_DIAL 1",
                "0.700001 deadline",
                "1.200001 frame of 1 from 0: REL_DIAL -2",
                "1.300001 deadline",  // pending deadlines fire at the end of input
                "1.300001 removed 0",
            ])
        #expect(out.map(\.json).filter { $0.contains("\"controls\"") }.count == 11)
    }
}
