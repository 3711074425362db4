import EvcaptureTesting
import Capture
import Evdev
import Vocabulary
import Foundation
import Testing
@testable import EvcaptureDaemon

/// What `evcapture devices` shows of counter axes and paired nodes.
@Suite struct DevicesReportTests {
    static func description(_ fixture: String, phys: String? = nil) throws -> DeviceDescription {
        var d = try EvemuRecording.load(path: Fixtures.path(fixture)).description
        d.phys = phys
        return d
    }

    @Test func aCounterAxisIsShown() throws {
        let d = try Self.description("contour-shuttlexpress-jog.evemu")
        let role = "dial,REL_DIAL=slider:counter,REL_WHEEL=ignore"
        let report = DeviceReport(profile: RoleClassifier.profile(for: d, node: "/dev/input/event4", udevRole: role), udevRole: role)
        #expect(report.counters == ["REL_DIAL"] && report.roles["REL_DIAL"] == "slider")
        let text = DeviceInventory(devices: [report], unreadable: [], listedBy: "udev").text()
        #expect(text.contains("    REL_DIAL             slider:counter EVCAPTURE_ROLE: REL_DIAL=slider:counter\n"), "\(text)")
        #expect(text.contains("    REL_WHEEL            ignore         EVCAPTURE_ROLE: REL_WHEEL=ignore\n"), "\(text)")
        let json = DeviceInventory(devices: [report], unreadable: [], listedBy: "udev").json()
        #expect(json.contains("\"counters\" : [\n      \"REL_DIAL\"\n    ]"), "\(json)")
    }

    @Test func pairedNodesShowEachOther() throws {
        let dial = try Self.description("griffin-powermate.evemu", phys: "usb-0000:00:14.0-2/input0")
        let push = DeviceDescription(
            name: "Knob Consumer Control", bus: .usb, vendor: 0x077d, product: 0x0410, phys: "usb-0000:00:14.0-2/input1",
            codes: [.synReport, .mute])
        let profiles = RoleClassifier.pair([
            RoleClassifier.profile(for: dial, node: "/dev/input/event5"), RoleClassifier.profile(for: push, node: "/dev/input/event6"),
        ])
        let inventory = DeviceInventory(
            devices: profiles.map { DeviceReport(profile: $0, udevRole: nil) }, unreadable: [], listedBy: "udev")
        let text = inventory.text()
        #expect(text.contains("    pushed by /dev/input/event6 \"Knob Consumer Control\" (same parent usb-0000:00:14.0-2)\n"), "\(text)")
        #expect(text.contains("    push switch of /dev/input/event5 \"Griffin PowerMate\" (same parent usb-0000:00:14.0-2)\n"), "\(text)")
        #expect(
            text.contains("/dev/input/event6  \"Knob Consumer Control\"  bus usb 077d:0410  [encoder, grabbed while running]\n"), "\(text)")
        #expect(inventory.devices[1].roles["KEY_MUTE"] == "light-press")
        #expect(inventory.devices[1].pairedWith == [.init(node: "/dev/input/event5", name: "Griffin PowerMate", relation: "encoder")])
    }
}
