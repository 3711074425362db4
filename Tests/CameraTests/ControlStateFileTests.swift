import EvcaptureTesting
import Capture
import Evdev
import Foundation
import Testing
import Camera
import V4L2

/// The small state file that remembers the current control.
@Suite struct ControlStateFileTests {
    func tempDir() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evcapture-state-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func pathFromTheEnvironment() {
        #expect(ControlStateFile(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/home/u"])?.path == "/x/state/evcapture/state.json")
        #expect(ControlStateFile(environment: ["HOME": "/home/u"])?.path == "/home/u/.local/state/evcapture/state.json")
        #expect(ControlStateFile(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"])?.path == "/h/.local/state/evcapture/state.json")
        #expect(ControlStateFile(environment: [:]) == nil)
        // systemd's StateDirectory= wins: ProtectHome= hides $HOME from the service
        #expect(ControlStateFile(environment: ["STATE_DIRECTORY": "/var/lib/evcapture", "HOME": "/home/u"])?.path == "/var/lib/evcapture/state.json")
        #expect(ControlStateFile(environment: ["STATE_DIRECTORY": "/var/lib/a:/var/lib/b"])?.path == "/var/lib/a/state.json")
    }

    @Test func roundTripsAndReplacesAtomically() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = try #require(ControlStateFile(environment: ["XDG_STATE_HOME": dir]))
        #expect(try file.load() == nil)  // nothing remembered yet
        try file.save(currentControl: "exposure-bias")
        #expect(try file.load() == "exposure-bias")
        try file.save(currentControl: "zoom")
        #expect(try file.load() == "zoom")
        #expect(try String(contentsOfFile: file.path, encoding: .utf8) == "{\"currentControl\":\"zoom\"}\n")
        // No temporary files are left next to it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/evcapture") == ["state.json"])
    }

    @Test func corruptFileIsAClearError() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = ControlStateFile(path: dir + "/state.json")
        try "not json".write(toFile: file.path, atomically: true, encoding: .utf8)
        #expect {
            try file.load()
        } throws: { error in
            "\(error)".hasPrefix(file.path + ": not a state file")
        }
    }

    @Test func rememberedControlIsCurrentAfterARestart() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = ControlStateFile(path: dir + "/state.json")
        // First run: the person selects exposure bias; the Bridge persists the reported name.
        let first = ControlsSession(rememberedControl: try file.load())
        _ = first.addDefaultControls(camera: SimCamera(), at: at(0))
        var events = first.handle(.lightPress, at: at(0))
        events += first.handle(.lightPress, at: at(0.1))
        events += first.handle(.slide(1), at: at(0.5))
        events += first.handle(.lightPress, at: at(1))
        for case .currentControl(let name) in events { try file.save(currentControl: name) }
        // Second run.
        let second = ControlsSession(rememberedControl: try file.load())
        _ = second.addDefaultControls(camera: SimCamera(), at: at(0))
        #expect(second.currentControl?.name == "exposure-bias")
    }
}
