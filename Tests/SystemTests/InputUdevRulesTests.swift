#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import Evdev
import Udev

private let canLoadRules = UinputDevice.isAvailable && getuid() == 0 && access("/run/udev/control", F_OK) == 0

/// The rules in udev-rules/ loaded into the running udevd (as runtime rules in
/// /run/udev/rules.d, removed afterwards): known identities get EVCAPTURE_ROLE.
@Suite(.enabled(if: canLoadRules, "needs root, /dev/uinput and a running udevd (run inside the VM)"))
struct InputUdevRulesTests {
    @Test func knownDevicesGetTheirRoleFromTheRules() throws {
        let source = "\(InputPaths.packageRoot)/udev-rules/70-evcapture.rules"
        let target = "/run/udev/rules.d/70-evcapture.rules"
        mkdir("/run/udev/rules.d", 0o755)
        let copy = try runProgram("/bin/cp", [source, target])
        try #require(copy.status == 0, "cp: \(copy.stderr)")
        defer {
            unlink(target)
            _ = try? runProgram("/usr/bin/udevadm", ["control", "--reload"])
        }
        let reload = try runProgram("/usr/bin/udevadm", ["control", "--reload"])
        try #require(reload.status == 0, "udevadm control --reload: \(reload.stderr)")

        let powermate = try UinputDevice(EvemuRecording.load(path: InputPaths.fixture("griffin-powermate")).description)
        defer { powermate.destroy() }
        let headset = try UinputDevice(EvemuRecording.load(path: InputPaths.fixture("bluez-avrcp-headset")).description)
        defer { headset.destroy() }
        let keyboard = try UinputDevice(EvemuRecording.load(path: InputPaths.fixture("usb-keyboard-typing-and-volume")).description)
        defer { keyboard.destroy() }
        _ = try runProgram("/usr/bin/udevadm", ["settle", "--timeout=10"])

        let listed = try UdevInputMonitor.enumerateNow()
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
