#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import EvcaptureDaemon
import Evdev
import Vocabulary
import Foundation
import Testing

/// An encoder and its push switch as two uinput devices of one "USB device" (the same phys
/// path up to `/inputN`), on the real kernel and udev: `evcapture run` pairs them as they come
/// and go, and the switch's push is the encoder's light press.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct PairingSystemTests {
    static let encoder = DeviceDescription(
        name: "Evcapture Test Knob", bus: .usb, vendor: 0x1d6b, product: 0x0104, phys: "usb-evcapture-test-1/input0",
        codes: [.synReport, .relDial])
    static let pushSwitch = DeviceDescription(
        name: "Evcapture Test Knob Consumer Control", bus: .usb, vendor: 0x1d6b, product: 0x0104,
        phys: "usb-evcapture-test-1/input1", codes: [.synReport, .mute, .nextSong])

    static func roles(_ object: JSONObject) -> [String: String] { object["roles"] as? [String: String] ?? [:] }

    @Test(.needsFakeCamera)
    func theSwitchIsPairedWhenItsEncoderArrivesAndUnpairedWhenItGoes() throws {
        let camera = try FakeCamera()
        let cameraNode = try camera.start()
        defer { try? camera.stop() }
        let push = try UinputDevice(Self.pushSwitch, autorepeat: false)
        let (scratch, daemon) = try startDaemonWithActionsOff("pairing", camera: cameraNode, devices: [push])
        defer { withExtendedLifetime(scratch) { _ = daemon.terminate() } }
        let alone = try #require(daemon.objects.first(where: DaemonLines.deviceAdded(push.node)))
        #expect(Self.roles(alone).isEmpty, "\(alone)")

        // The encoder arrives: the switch is re-added with KEY_MUTE as light press.
        let before = daemon.objects.count
        var knob: UinputDevice? = try UinputDevice(Self.encoder, autorepeat: false)
        try #require(daemon.waitFor(from: before, DaemonLines.deviceAdded(knob!.node)) != nil, "\(daemon.transcript)")
        let paired = try #require(
            daemon.waitFor(from: before) { DaemonLines.deviceAdded(push.node)($0) && Self.roles($0)["KEY_MUTE"] == "light-press" },
            "\(daemon.transcript)")
        #expect(Self.roles(paired.object)["KEY_NEXTSONG"] == nil, "\(paired.object)")

        // Its press activates the controls; the knob then moves the zoom.
        let beforePress = daemon.objects.count
        try push.click(.mute)
        let active = daemon.waitFor(from: beforePress) { $0.event == "controls" && $0.string("state") == "active" }
        #expect(active != nil, "\(daemon.transcript)")
        try knob!.move(.relDial, by: 1)
        #expect(camera.waitUntilReceived("zoom_absolute", 108, timeout: .seconds(20)), "\(camera.log)\n\(daemon.transcript)")

        // The encoder goes: the switch is re-added without the pairing.
        let beforeUnplug = daemon.objects.count
        knob!.destroy()
        knob = nil
        let unpaired = daemon.waitFor(from: beforeUnplug) { DaemonLines.deviceAdded(push.node)($0) && Self.roles($0).isEmpty }
        #expect(unpaired != nil, "\(daemon.transcript)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        #expect(!daemon.objects.contains { $0.event == "error" }, "\(daemon.transcript)")
    }
}
