#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing
import Evdev
import Udev

private let udevdRunning = getuid() == 0 && access("/run/udev/control", F_OK) == 0

/// The rules in udev-rules/ in the running udevd: known identities get EVCAPTURE_ROLE.
/// Tests/System/run installs them at boot; otherwise (`--no-project-rules`, vmlab) the test
/// loads them as runtime rules in /run/udev/rules.d and removes them afterwards.
@Suite(.systemTest, .enabled(if: udevdRunning, "needs root and a running udevd"))
struct InputUdevRulesTests {
    @Test func knownDevicesGetTheirRoleFromTheRules() async throws {
        let source = "\(InputPaths.packageRoot)/udev-rules/70-evcapture.rules"
        let installed = access("/etc/udev/rules.d/70-evcapture.rules", F_OK) == 0
        let target = "/run/udev/rules.d/70-evcapture.rules"
        if !installed {
            mkdir("/run/udev/rules.d", 0o755)
            let copy = try runProgram("/bin/cp", [source, target])
            try #require(copy.status == 0, "cp: \(copy.stderr)")
            let reload = try runProgram("/usr/bin/udevadm", ["control", "--reload"])
            try #require(reload.status == 0, "udevadm control --reload: \(reload.stderr)")
        }
        defer {
            if !installed {
                unlink(target)
                _ = try? runProgram("/usr/bin/udevadm", ["control", "--reload"])
            }
        }

        let powermate = try UinputDevice(EvemuRecording.load(path: InputPaths.fixture("griffin-powermate")).description)
        defer { powermate.destroy() }
        let headset = try UinputDevice(EvemuRecording.load(path: InputPaths.fixture("bluez-avrcp-headset")).description)
        defer { headset.destroy() }
        let keyboard = try UinputDevice(EvemuRecording.load(path: InputPaths.fixture("usb-keyboard-typing-and-volume")).description)
        defer { keyboard.destroy() }
        let nodes = [powermate.node, headset.node, keyboard.node]
        try await waitForUdev(nodes)
        // `udevadm test` runs the rules as read from disk now: deterministic.
        let listedBefore = try UdevInputMonitor.enumerateNow()
        for (node, expected) in [(powermate.node, "dial"), (headset.node, "headset")] {
            let syspath = try #require(listedBefore.first { $0.node == node }?.syspath)
            let test = try runProgram("/usr/bin/udevadm", ["test", syspath])
            #expect((test.stdout + test.stderr).contains("EVCAPTURE_ROLE=\(expected)"), "udevadm test \(syspath)")
        }
        // udevd itself: a change event applies the rules to the database. A worker that was
        // busy (other tests create devices) during the reload may still hold the old rules,
        // so the change is retried until a fresh worker handles it.
        var listed: [UdevInputDevice] = []
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            _ = try runProgram("/usr/bin/udevadm", ["trigger", "--settle", "--action=change"] + nodes)
            listed = try UdevInputMonitor.enumerateNow()
            if listed.first(where: { $0.node == powermate.node })?.role != nil,
               listed.first(where: { $0.node == headset.node })?.role != nil { break }
            try await Task.sleep(for: .milliseconds(500))
        } while ContinuousClock.now < deadline
        func role(_ node: String) -> String? { listed.first { $0.node == node }?.role }
        #expect(role(powermate.node) == "dial")
        #expect(role(headset.node) == "headset")
        #expect(role(keyboard.node) == nil)
        let info = try runProgram("/usr/bin/udevadm", ["info", "--query=property", "--name=\(powermate.node)"])
        #expect(info.stdout.contains("EVCAPTURE_ROLE=dial"))

        let json = try runProgram(InputPaths.executable, ["devices", "--json"])
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let entry = try #require(array.first { $0["node"] as? String == powermate.node })
        #expect(entry["udevRole"] as? String == "dial")
        #expect(entry["sources"] as? [String: String] == ["BTN_0": "udev", "REL_DIAL": "udev"])
        #expect(entry["roles"] as? [String: String] == ["BTN_0": "light-press", "REL_DIAL": "slider"])
    }
}
