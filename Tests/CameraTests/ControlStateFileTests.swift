import EvcaptureTesting
import Foundation
import Testing
import Synchronization
import Dispatch
@testable import Camera

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
        #expect(
            ControlStateFile(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"])?.path == "/h/.local/state/evcapture/state.json")
        #expect(ControlStateFile(environment: [:]) == nil)
        // systemd's StateDirectory= wins: ProtectHome= hides $HOME from the service
        #expect(
            ControlStateFile(environment: ["STATE_DIRECTORY": "/var/lib/evcapture", "HOME": "/home/u"])?.path
                == "/var/lib/evcapture/state.json")
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
        #expect(try String(contentsOfFile: file.path, encoding: .utf8) == "{\"current_control\":\"zoom\"}\n")
        // No temporary files are left next to it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/evcapture") == ["state.json"])
    }

    /// An earlier version's file (`currentControl`) is still read; the new key wins when a
    /// file has both; a key of neither is nothing remembered, a name that is not a string an error.
    @Test func anEarlierVersionsFileIsRead() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = ControlStateFile(path: dir + "/state.json")
        for (text, expected) in [
            ("{\"currentControl\":\"iso\"}\n", "iso"), ("{\"currentControl\":\"iso\",\"current_control\":\"wb\"}", "wb"),
            ("{\"other\":\"iso\"}", nil), ("{\"current_control\":null}", nil),
        ] as [(String, String?)] {
            try text.write(toFile: file.path, atomically: true, encoding: .utf8)
            #expect(try file.load() == expected, "\(text)")
        }
        try "{\"current_control\":3}".write(toFile: file.path, atomically: true, encoding: .utf8)
        #expect(throws: ControlStateFile.Failure.self) { try file.load() }
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

/// The remembered control under the service sandbox (docs/behaviour.md#controls-interaction).
@Suite struct ControlStateSandboxTests {
    /// systemd's `StateDirectory=` wins over the home directory, which `ProtectHome=` hides.
    @Test func stateDirectoryComesFirst() {
        let env = ["STATE_DIRECTORY": "/var/lib/evcapture", "XDG_STATE_HOME": "/home/u/.local/state", "HOME": "/home/u"]
        #expect(ControlStateFile(environment: env)?.path == "/var/lib/evcapture/state.json")
        #expect(
            ControlStateFile(environment: ["STATE_DIRECTORY": "/var/lib/evcapture:/var/lib/other"])?.path == "/var/lib/evcapture/state.json"
        )
        #expect(ControlStateFile(environment: ["STATE_DIRECTORY": "", "HOME": "/h"])?.path == "/h/.local/state/evcapture/state.json")
    }

    /// The unit gives the daemon that directory, and hides home directories.
    @Test func theUnitHasAStateDirectory() throws {
        let unit = try String(contentsOfFile: Fixtures.repository + "/systemd/evcapture.service", encoding: .utf8)
        let lines = Set(unit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(lines.contains("StateDirectory=evcapture"))
        #expect(lines.contains("ProtectHome=yes"))
    }

    /// `remember` returns while a save is blocked (it runs on the saver's thread, not the
    /// caller's); names that come meanwhile collapse to the last one.
    @Test(.timeLimit(.minutes(1))) func savesOffTheCallersThreadLatestWins() async throws {
        let release = DispatchSemaphore(value: 0)
        let saved = Mutex<[String]>([])
        let threads = Mutex<Set<UInt>>([])
        let started = Mutex<[String]>([])
        let saver = ControlStateSaver { name in
            threads.withLock { _ = $0.insert(UInt(pthread_self())) }
            started.withLock { $0.append(name) }
            if name == "zoom" { release.wait() }
            saved.withLock { $0.append(name) }
        }
        let caller = UInt(pthread_self())
        saver.remember("zoom")
        // the save of "zoom" is under way, blocked
        #expect(await eventually { started.withLock { $0 } == ["zoom"] })
        // Were remember waiting for the blocked save, this line would never be reached (the
        // test's time limit would end it).
        saver.remember("iso")
        saver.remember("exposure-bias")
        #expect(saved.withLock { $0 } == [])
        release.signal()
        #expect(await eventually { saver.isIdle })
        #expect(saved.withLock { $0 } == ["zoom", "exposure-bias"])
        #expect(!threads.withLock { $0 }.contains(caller))
    }
}
