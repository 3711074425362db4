import EvcaptureTesting
import Capture
import Evdev
import Foundation
import Testing
@testable import EvcaptureDaemon

/// What `evcapture devices` shows of counter axes.
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
}
