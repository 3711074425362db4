import EvcaptureTesting
import Capture
import Evdev
import Vocabulary
import Foundation
import Testing
import ConfigFile
@testable import EvcaptureDaemon

/// The README's five-minute tour shows what `evcapture devices --config` prints on a
/// Raspberry Pi with a shutter button and an encoder with a push switch: made here from the
/// same fixtures and the README's own config, so the README cannot drift from the program.
@Suite struct ReadmeSamplesTests {
    static let piConfig = ReadmeExamples.piConfig

    static func devicesText() throws -> String {
        let config = try Config.parse(piConfig, file: "/etc/evcapture/config.toml")
        var button = try EvemuRecording.load(path: Fixtures.path("gpio-keys-volume-keys.evemu")).description
        button.codes.remove(.volumeUp)  // one button: KEY_VOLUMEDOWN, as the overlay's keycode=114 makes it
        let push = try EvemuRecording.load(path: Fixtures.path("rotary-encoder-push-switch-gpio-keys.evemu")).description
        let encoder = try EvemuRecording.load(path: Fixtures.path("rotary-encoder-rel-x.evemu")).description
        let nodes: [(String, DeviceDescription, String?)] = [
            ("/dev/input/event0", button, nil), ("/dev/input/event1", encoder, nil), ("/dev/input/event2", push, nil),
        ]
        let profiles = RoleClassifier.pair(
            nodes.map { RoleClassifier.profile(for: $0.1, node: $0.0, udevRole: $0.2, config: config.overrides(for: $0.1, node: $0.0)) })
        let inventory = DeviceInventory(
            devices: zip(profiles, nodes).map { DeviceReport(profile: $0, udevRole: $1.2) }, unreadable: [], listedBy: "udev",
            described: nodes.map { ($0.0, $0.1) })
        var warnings = 0
        return inventory.text() + "\nRules of /etc/evcapture/config.toml:\n"
            + ConfigCheck.rulesText(config: config, file: "/etc/evcapture/config.toml", inventory: inventory, warnings: &warnings)
    }

    @Test func theReadmeShowsWhatDevicesPrintsOnAPi() throws {
        let text = try Self.devicesText()
        let readme = try String(contentsOfFile: Fixtures.path("../../README.md"), encoding: .utf8)
        #expect(readme.contains(Self.piConfig), "README's Raspberry Pi config differs")
        #expect(readme.contains("$ evcapture devices --config /etc/evcapture/config.toml\n" + text), "README should show:\n\(text)")
    }
}
