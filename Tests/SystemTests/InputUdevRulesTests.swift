#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing
import Evdev
import Vocabulary
import Udev

private let udevdRunning = getuid() == 0 && access("/run/udev/control", F_OK) == 0

/// The rules in udev-rules/ in the running udevd: devices evcapture knows are tagged
/// `uaccess` and get their roles from evcapture itself; a site rule's `EVCAPTURE_ROLE`
/// reaches the daemon and overrides them (docs/behaviour.md#known-devices).
/// Tests/System/run installs the shipped rules at boot; otherwise (`--no-project-rules`,
/// vmlab) the test loads them as runtime rules in /run/udev/rules.d. The site rule is always
/// a runtime rule, removed afterwards.
@Suite(.systemTest, .enabled(if: udevdRunning, "needs root and a running udevd"))
struct InputUdevRulesTests {
    @Test func aSiteRuleOverridesTheBuiltInRolesAndKnownDevicesAreTaggedUaccess() async throws {
        let source = "\(Fixtures.repository)/udev-rules/70-evcapture.rules"
        let installed = access("/etc/udev/rules.d/70-evcapture.rules", F_OK) == 0
        let target = "/run/udev/rules.d/70-evcapture.rules"
        let site = "/run/udev/rules.d/71-evcapture-local.rules"
        mkdir("/run/udev/rules.d", 0o755)
        if !installed {
            let copy = try runProgram("/bin/cp", [source, target])
            try #require(copy.status == 0, "cp: \(copy.stderr)")
        }
        // The PowerMate's button as a shutter: a site override of one code.
        let rule =
            "SUBSYSTEM==\"input\", KERNEL==\"event*\", ATTRS{id/bustype}==\"0003\", ATTRS{id/vendor}==\"077d\", "
            + "ATTRS{id/product}==\"0410\", ENV{EVCAPTURE_ROLE}=\"BTN_0=primary\", TAG+=\"uaccess\"\n"
        try rule.write(toFile: site, atomically: true, encoding: .utf8)
        let reload = try runProgram("/usr/bin/udevadm", ["control", "--reload"])
        try #require(reload.status == 0, "udevadm control --reload: \(reload.stderr)")
        defer {
            unlink(site)
            if !installed { unlink(target) }
            _ = try? runProgram("/usr/bin/udevadm", ["control", "--reload"])
        }

        let powermate = try UinputDevice(EvemuRecording.load(path: Fixtures.evemu("griffin-powermate")).description)
        defer { powermate.destroy() }
        let headset = try UinputDevice(EvemuRecording.load(path: Fixtures.evemu("bluez-avrcp-headset")).description)
        defer { headset.destroy() }
        let keyboard = try UinputDevice(EvemuRecording.load(path: Fixtures.evemu("usb-keyboard-typing-and-volume")).description)
        defer { keyboard.destroy() }
        let nodes = [powermate.node, headset.node, keyboard.node]
        try await waitForUdev(nodes)
        // `udevadm test` runs the rules as read from disk now: deterministic.
        let listedBefore = try UdevInputMonitor.enumerateNow()
        let powermatePath = try #require(listedBefore.first { $0.node == powermate.node }?.syspath)
        let test = try runProgram("/usr/bin/udevadm", ["test", powermatePath])
        #expect((test.stdout + test.stderr).contains("EVCAPTURE_ROLE=BTN_0=primary"), "udevadm test \(powermatePath)")
        // udevd itself: a change event applies the rules to the database. A worker that was
        // busy (other tests create devices) during the reload may still hold the old rules,
        // so the change is retried until a fresh worker handles it.
        var listed: [UdevInputDevice] = []
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            _ = try runProgram("/usr/bin/udevadm", ["trigger", "--settle", "--action=change"] + nodes)
            listed = try UdevInputMonitor.enumerateNow()
            if listed.first(where: { $0.node == powermate.node })?.role != nil { break }
            try await Task.sleep(for: .milliseconds(500))
        } while ContinuousClock.now < deadline
        func role(_ node: String) -> String? { listed.first { $0.node == node }?.role }
        #expect(role(powermate.node) == "BTN_0=primary")
        #expect(role(headset.node) == nil, "the shipped rules set no roles")
        #expect(role(keyboard.node) == nil)
        let headsetInfo = try runProgram("/usr/bin/udevadm", ["info", "--query=property", "--name=\(headset.node)"])
        #expect(headsetInfo.stdout.contains(":uaccess:"), "the AVRCP headset is not tagged uaccess: \(headsetInfo.stdout)")
        let keyboardInfo = try runProgram("/usr/bin/udevadm", ["info", "--query=property", "--name=\(keyboard.node)"])
        #expect(!keyboardInfo.stdout.contains(":uaccess:"), "a keyboard must not be readable by the seat's user through these rules")

        let json = try runProgram(DaemonPaths.evcapture, ["devices", "--json"])
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let entry = try #require(array.first { $0["node"] as? String == powermate.node })
        #expect(entry["udev_role"] as? String == "BTN_0=primary")
        #expect(entry["sources"] as? [String: String] == ["BTN_0": "udev", "REL_DIAL": "known-device"])
        #expect(entry["roles"] as? [String: String] == ["BTN_0": "primary", "REL_DIAL": "slider"])
    }
}
