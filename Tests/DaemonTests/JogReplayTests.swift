import EvcaptureTesting
import Capture
@testable import Roles
import Evdev
import Vocabulary
import Testing
import EvcaptureDaemon
import Camera
import ConfigFile

/// The Contour ShuttleXpress jog wheel replayed into the simulated camera's zoom: its REL_DIAL
/// is a position counter (`slider:counter`, from evcapture's known-device table or the config),
/// the same without udev rules (run from source, replay) as installed.
///
/// One detent is 8 raw zoom units (see ``ControlsReplayTests``): raw = 100 + 8 × steps.
@Suite struct JogReplayTests {
    static let fixture = Fixtures.path("contour-shuttlexpress-jog.evemu")

    /// The fixture's device description with `events` (`E:` lines) instead of its own.
    static func recording(_ events: [String]) throws -> ReplayInput {
        let text = try String(contentsOfFile: fixture, encoding: .utf8)
        let header = text.split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.hasPrefix("E:") }.map(String.init)
        let path = "shuttlexpress.evemu"
        let lines: [String] = header + events
        return ReplayInput(path: path, recording: try EvemuRecording.parse(lines.joined(separator: "\n") + "\n", file: path))
    }

    /// A jog frame: REL_DIAL `value` (and the shuttle ring's REL_WHEEL, if given) at `t`.
    static func jog(_ t: String, _ value: Int, ring: Int? = nil) -> [String] {
        (ring.map { ["E: \(t) 0002 0008 \(String(format: "%04d", $0))"] } ?? [])
            + ["E: \(t) 0002 0007 \(String(format: "%04d", value))", "E: \(t) 0000 0000 0000"]
    }

    /// Replays `inputs` with the sim camera; returns the raw zoom of every control event.
    static func zooms(
        _ inputs: [ReplayInput], config: Config = Config()
    ) throws -> (raws: [Int64], camera: SimCamera) {
        let camera = SimCamera()
        let stage = CameraControlsStage(camera: camera)
        var pipeline = ReplayPipeline(
            inputs: inputs, overrides: { config.overrides(for: $0, node: $1) },
            udevRole: { _ in nil }, controls: stage)
        let raws = pipeline.run().compactMap { event -> Int64? in
            if case .control(let report) = event { return report.change.raw } else { return nil }
        }
        return (raws, camera)
    }

    @Test func theKnownDeviceTableMakesTheJogACounterAndTheShuttleRingARate() throws {
        let d = try EvemuRecording.load(path: Self.fixture).description
        let p = RoleClassifier.profile(for: d, node: "n", udevRole: nil)
        #expect(p.roles[.relDial]?.isCounter == true && p.role(of: .relDial) == .slider)
        #expect(p.roles[.relDial]?.source == .knownDevice)
        #expect(p.roles[.relWheel]?.reading == .rate && p.kind == .dial && p.warnings.isEmpty)
        // The ShuttlePro v2 gets the same; another product of the vendor does not.
        var pro = d
        pro.product = 0x0030
        #expect(RoleClassifier.profile(for: pro, node: "n").roles[.relDial]?.isCounter == true)
        var other = d
        other.product = 0x0010
        #expect(RoleClassifier.profile(for: other, node: "n").roles[.relDial]?.isCounter != true)
        // The shipped udev rules carry no roles: device knowledge is the program's own.
        #expect(try ShippedUdevRules.role(for: d) == nil)
    }

    /// The fixture: first report 250 (a position), +1 +1 +2 +1, +2 across 255 → 1, +1; the
    /// shuttle ring held at 3 (1.0 s: a step at once, the next due 1/6 s later), 5 (1.1 s: the
    /// next re-timed to 1.2 s) and −2 (1.2 s: a step back at once, the next at 1.45 s), back at
    /// rest in the jog's report at 1.5 s; −1, −2 across 1 → 255, −1; a button frame repeats 254.
    @Test func theFixtureMovesTheZoomByExactlyItsSteps() throws {
        let (raws, camera) = try Self.zooms([ReplayInput.load(paths: [Self.fixture])[0]])
        #expect(raws == [108, 116, 132, 140, 156, 164, 172, 180, 172, 164, 156, 140, 132])
        #expect(try camera.value(of: .zoomAbsolute) == 132)
    }

    /// The ring turned out to +2 and held for two seconds, then let go (the next report has no
    /// REL_WHEEL): the zoom moves at 4 steps a second while held and not at all after, however
    /// long the replay's clock runs on (a slider of detents moved it by the position instead,
    /// and on the way back again).
    @Test func theRingMovesTheZoomWhileHeldAndStopsWhenLetGo() throws {
        let input = try Self.recording(
            Self.jog("0.000001", 40) + Self.jog("1.000001", 40, ring: 1) + Self.jog("1.100001", 40, ring: 2)
                + Self.jog("3.100001", 40) + Self.jog("9.000001", 40))
        let (raws, _) = try Self.zooms([input])
        // +1 at 1.0; +2 at 1.1 re-times: steps at 1.35, 1.6, …, 3.1 (eight), the last at the
        // very time of the rest report, which comes after it.
        #expect(raws == (1...9).map { 100 + 8 * Int64($0) }, "\(raws)")
    }

    @Test func theConfigCanMakeAnyDeviceACounter() throws {
        var moved = try ReplayInput.load(paths: [Self.fixture])[0]
        moved.recording.description.vendor = 0x1234  // not a known device
        let (raws, _) = try Self.zooms(
            [moved],
            config: Config.parse(
                """
                [devices.jog]
                vendor = "1234"
                product = "0020"
                roles = { REL_DIAL = "slider:counter", REL_WHEEL = "ignore" }
                """, file: "jog.toml"))
        #expect(raws == [108, 116, 132, 140, 156, 164, 156, 140, 132])
    }

    @Test func readAsStepsTheFirstReportJumpsToTheEnd() throws {
        // What the counter is for: read as steps (the config says so), the first report
        // (position 250) is 250 detents.
        let config = try Config.parse(
            """
            [devices.jog]
            vendor = "0b33"
            product = "0020"
            roles = { REL_DIAL = "slider" }
            """, file: "jog.toml")
        let (raws, _) = try Self.zooms([ReplayInput.load(paths: [Self.fixture])[0]], config: config)
        #expect(raws.first == 500)
    }

    @Test func aResyncMakesTheNextValueAReferenceAgain() throws {
        let input = try Self.recording(
            Self.jog("0.000001", 100) + Self.jog("0.100001", 101)
                // SYN_DROPPED: the rest of that frame is dropped (libevdev's rule), and the
                // wheel went on meanwhile.
                + ["E: 0.200001 0000 0003 0000", "E: 0.200001 0002 0007 0150", "E: 0.200001 0000 0000 0000"]
                + Self.jog("0.300001", 180) + Self.jog("0.400001", 182) + Self.jog("0.500001", 181))
        let (raws, _) = try Self.zooms([input])
        #expect(raws == [108, 124, 116])
    }

    @Test func bothWrapsAndRepeats() throws {
        let input = try Self.recording(
            Self.jog("0.000001", 250) + Self.jog("0.100001", 255)  // reference, then +5
                + Self.jog("0.200001", 1)  // +2 up across the wrap
                + Self.jog("0.300001", 255)  // −2 down across the wrap
                + Self.jog("0.400001", 255, ring: 4) + Self.jog("0.500001", 255, ring: -3)  // repeats; the ring +1, −1
                + Self.jog("0.600001", 254) + Self.jog("0.700001", 2))  // −1, then +4 across the wrap
        let (raws, _) = try Self.zooms([input])
        #expect(raws == [140, 156, 140, 148, 140, 132, 164])
    }

    /// Turns while the session is stopped (camera unplugged, say) move nothing, but the
    /// next turn after it resumes moves by its own steps, not by everything turned meanwhile.
    @Test func turnsWhileStoppedAreFollowedNotApplied() throws {
        let input = try Self.recording([])
        let camera = SimCamera()
        let stage = CameraControlsStage(camera: camera)
        let profile = RoleClassifier.profile(
            for: input.recording.description, node: "jog")
        var pipeline = Pipeline(settings: CaptureCoreSettings(), controls: stage)
        var raws: [Int64] = []
        let emit: (PipelineEvent) -> Void = { if case .control(let r) = $0, let raw = r.change.raw { raws.append(raw) } }
        func turn(_ t: Double, _ value: Int32) {
            let time = Timestamp(microseconds: Int64(t * 1_000_000))
            pipeline.handle(Frame(events: [InputEvent(time: time, .relDial, value)], time: time), device: 0, now: time, emit)
        }
        _ = pipeline.addDevice(profile, at: Timestamp(microseconds: 0), emit)
        pipeline.sessionStarted(at: Timestamp(microseconds: 0), emit)
        turn(0.1, 10)
        turn(0.2, 12)  // +2
        pipeline.sessionStopped(at: Timestamp(microseconds: 300_000), emit)
        turn(0.4, 100)
        turn(0.5, 250)
        pipeline.sessionStarted(at: Timestamp(microseconds: 600_000), emit)
        turn(0.7, 251)  // +1
        #expect(raws == [116, 124])
    }
}
