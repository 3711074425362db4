import Vocabulary
@testable import Roles
import Testing

/// The known-device table (docs/behaviour.md#known-devices): read by the classifier itself,
/// below udev and the config.
@Suite struct KnownDevicesTests {
    @Test func everyEntryParsesWithoutProblems() {
        for entry in KnownDevice.table {
            let (overrides, problems) = RoleOverrides.parse(udevProperty: entry.roles)
            #expect(problems.isEmpty, "\(entry.product): \(problems)")
            #expect(overrides.kind != nil || !overrides.codes.isEmpty, "\(entry.product) says nothing")
        }
    }

    @Test func theKnobIsAKnobWithoutUdevAndTheConfigStillWins() throws {
        let d = DeviceDescription(
            name: "STMicroelectronics USB Volume Control", bus: .usb, vendor: 0x0483, product: 0x572d,
            codes: [.volumeUp, .volumeDown, .mute])
        let known = RoleClassifier.profile(for: d, node: "n")
        #expect(known.kind == .knob && known.role(of: .volumeUp) == .slider)
        #expect(known.roles[.volumeUp]?.source == .knownDevice)
        // Another product id of the same vendor is read from its capabilities only.
        var other = d
        other.product = 0x5720
        #expect(RoleClassifier.profile(for: other, node: "n").kind != .knob)
        // udev and the config override the table.
        let udev = RoleClassifier.profile(for: d, node: "n", udevRole: "buttons")
        #expect(udev.kind == .buttons && udev.roles[.volumeUp]?.source == .udev)
        let (config, _) = RoleOverrides.parse(udevProperty: "KEY_MUTE=primary")
        let configured = RoleClassifier.profile(for: d, node: "n", config: config)
        #expect(configured.role(of: .mute) == .primary && configured.roles[.mute]?.source == .config)
        #expect(configured.kind == .knob)
    }

    @Test func aBluetoothRemoteIsMatchedByNamePrefixOnBluetoothOnly() {
        let remote = DeviceDescription(name: "AB Shutter3       ", bus: .bluetooth, codes: [.volumeUp, .enter])
        #expect(KnownDevice.entry(for: remote)?.roles == "shutter")
        var usb = remote
        usb.bus = .usb
        #expect(KnownDevice.entry(for: usb) == nil)
    }
}
