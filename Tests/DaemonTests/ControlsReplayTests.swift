import EvcaptureTesting
import Capture
import Foundation
import Testing
import EvcaptureDaemon
import Camera
import Output
import ConfigFile

/// `evcapture replay --camera sim` of the fixture recordings: the zoom values each yields.
///
/// The system zoom slider on the simulated camera (zoom_absolute 100…500) spans 1.0×…5.0×;
/// at the default 50 steps per range one detent is 4.0 / 50 = 0.08× = 8 raw units, so raw =
/// 100 + 8 × (net detents) while no end or prominent value (2×) is reached.
@Suite struct ControlsReplayTests {
    static func fixture(_ name: String) -> String { Fixtures.path(name) }

    /// Replays `files` through the pipeline with the sim camera; returns the JSON lines and the camera.
    static func replay(_ files: [String], config: Config = Config()) throws -> (lines: [String], camera: SimCamera) {
        let camera = SimCamera()
        let stage = CameraControlsStage(camera: camera)
        var pipeline = ReplayPipeline(inputs: try ReplayInput.load(paths: files.map(fixture)), config: config, controls: stage)
        return (pipeline.run().map(\.json), camera)
    }

    static func controlLines(_ lines: [String]) -> [String] { lines.filter { $0.hasPrefix("{\"event\":\"control\"") } }
    static func stateLines(_ lines: [String]) -> [String] { lines.filter { $0.hasPrefix("{\"event\":\"controls\"") } }

    static func zoom(_ value: String, _ raw: Int, _ time: String) -> String {
        "{\"event\":\"control\",\"control\":\"zoom\",\"value\":\(value),\"raw\":\(raw),\"title\":\"Zoom\","
            + "\"min\":1,\"max\":5,\"prominent\":[2,3,4],\"format\":\"%.1f×\",\"time\":\(time)}"
    }
    static func state(_ state: String, _ time: String) -> String {
        "{\"event\":\"controls\",\"state\":\"\(state)\",\"control\":\"zoom\",\"time\":\(time)}"
    }

    /// Rotary encoder (REL_X +5, −3) with its push switch: raw 100 + 8 × 2 = 116.
    @Test func rotaryEncoderWithPushSwitch() throws {
        let (lines, camera) = try Self.replay(["rotary-encoder-rel-x.evemu", "rotary-encoder-push-switch-gpio-keys.evemu"])
        #expect(
            Self.controlLines(lines) == [
                Self.zoom("1.08", 108, "0.000001"), Self.zoom("1.16", 116, "0.040001"), Self.zoom("1.24", 124, "0.080001"),
                Self.zoom("1.32", 132, "0.120001"), Self.zoom("1.4", 140, "0.160001"),
                Self.zoom("1.32", 132, "1.000001"), Self.zoom("1.24", 124, "1.040001"), Self.zoom("1.16", 116, "1.080001"),
            ])
        // The first detent activates the controls and already moves the zoom; the switch's
        // press at 1.5 s (active, not a double press) keeps them active until 4.5 s.
        #expect(
            Self.stateLines(lines).dropFirst() == [
                Self.state("active", "0.000001"), Self.state("adjusting", "0.000001"),
                Self.state("adjusting-ended", "2.080001"), Self.state("inactive", "4.500001"),
            ])
        #expect(try camera.value(of: .zoomAbsolute) == 116)
        #expect(
            lines.contains(
                "{\"event\":\"controls\",\"state\":\"configured\",\"controls\":[\"zoom\",\"exposure-bias\"],\"control\":\"zoom\",\"time\":0.000001}"
            ))
    }

    /// The encoder alone: the same values, inactive 3 s after its last detent.
    @Test func rotaryEncoderAlone() throws {
        let (lines, camera) = try Self.replay(["rotary-encoder-rel-x.evemu"])
        #expect(Self.controlLines(lines).count == 8)
        #expect(Self.stateLines(lines).last == Self.state("inactive", "4.080001"))
        #expect(try camera.value(of: .zoomAbsolute) == 116)
    }

    /// Griffin PowerMate: BTN_0 (light press) activates, REL_DIAL +1 ×4 then −2 in one frame:
    /// raw 100 + 8 × 2 = 116, the −2 frame as one change.
    @Test func griffinPowerMate() throws {
        let (lines, camera) = try Self.replay(["griffin-powermate.evemu"])
        #expect(
            Self.controlLines(lines) == [
                Self.zoom("1.08", 108, "0.600001"), Self.zoom("1.16", 116, "0.630001"), Self.zoom("1.24", 124, "0.660001"),
                Self.zoom("1.32", 132, "0.690001"), Self.zoom("1.16", 116, "1.200001"),
            ])
        #expect(
            Self.stateLines(lines).dropFirst() == [
                Self.state("active", "0.000001"), Self.state("adjusting", "0.600001"),
                Self.state("adjusting-ended", "2.200001"), Self.state("inactive", "4.200001"),
            ])
        #expect(try camera.value(of: .zoomAbsolute) == 116)
    }

    /// Huion dial: REL_WHEEL and REL_WHEEL_HI_RES in every frame, counted once: +4 −3 →
    /// raw 100 + 8 × 1 = 108 (counting both would give 100 + 8 × 2 = 116).
    @Test func huionDialWheel() throws {
        let (lines, camera) = try Self.replay(["huion-q620m-dial.evemu"])
        #expect(
            Self.controlLines(lines) == [
                Self.zoom("1.08", 108, "0.000001"), Self.zoom("1.16", 116, "0.070001"), Self.zoom("1.24", 124, "0.140001"),
                Self.zoom("1.32", 132, "0.210001"), Self.zoom("1.24", 124, "0.880001"), Self.zoom("1.16", 116, "0.950001"),
                Self.zoom("1.08", 108, "1.020001"),
            ])
        #expect(try camera.value(of: .zoomAbsolute) == 108)
    }

    /// A volume knob (config `kind = "knob"`): KEY_VOLUMEUP ×4, KEY_VOLUMEDOWN ×2 → 116.
    @Test func volumeKnobKeys() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evcapture-knob-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("knob.toml").path
        try "[devices.\"Logitech Logitech USB Keyboard Consumer Control\"]\nkind = \"knob\"\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        let (lines, camera) = try Self.replay(["logitech-media-keyboard-elite-volume-wheel.evemu"], config: try Config.load(path: path))
        #expect(Self.controlLines(lines).map { $0.contains("\"raw\":") } == Array(repeating: true, count: 6))
        #expect(Self.controlLines(lines).last == Self.zoom("1.16", 116, "1.000001"))
        #expect(try camera.value(of: .zoomAbsolute) == 116)
        // No capture events: a knob's keys are slider keys, not shutter buttons.
        #expect(!lines.contains { $0.hasPrefix("{\"event\":\"capture\"") })
    }

    /// A recording without slider devices changes nothing.
    @Test func buttonsOnlyMoveNothing() throws {
        let (lines, camera) = try Self.replay(["gpio-keys-volume-keys.evemu"])
        #expect(Self.controlLines(lines).isEmpty)
        #expect(camera.setLog.isEmpty)
    }

    /// The command itself, end to end, here and in the test VM (posix_spawn, see
    /// ``EvcaptureCommand``: Foundation's Process was what hung there).
    @Test func commandLine() throws {
        let r = try EvcaptureCommand.run(["replay", Self.fixture("rotary-encoder-rel-x.evemu"), "--camera", "sim", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(Self.controlLines(lines).first == Self.zoom("1.08", 108, "0.000001"))
        #expect(Self.controlLines(lines).last == Self.zoom("1.16", 116, "1.080001"))
        #expect(lines.contains(Self.state("active", "0.000001")))

        // A camera that is not there: a clear error naming it, and no output.
        let bad = try EvcaptureCommand.run(["replay", Self.fixture("rotary-encoder-rel-x.evemu"), "--camera", "/dev/evcapture-no-camera"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("/dev/evcapture-no-camera"), "\(bad.stderr)")
        #expect(bad.stdout.isEmpty)
    }
}
