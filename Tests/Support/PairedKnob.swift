import Evdev
import Vocabulary
import Roles

/// An encoder and its push switch on separate event nodes of one physical device (the
/// PowerMate's real description as interface 0, a consumer-control node as interface 1), for
/// the pairing tests of the roles and of the controls' decoder.
public enum PairedKnob {
    /// The PowerMate's real description, as interface 0 of a USB device.
    public static func encoder(phys: String? = "usb-0000:00:14.0-2/input0", uniq: String? = nil) throws -> DeviceDescription {
        var d = try EvemuRecording.load(path: Fixtures.path("griffin-powermate.evemu")).description
        d.phys = phys
        d.uniq = uniq
        return d
    }

    /// Its push switch as interface 1: a consumer-control node with mute, play/pause and
    /// next-song keys (synthetic: such knobs over-advertise their second interface).
    public static func pushSwitch(phys: String? = "usb-0000:00:14.0-2/input1", uniq: String? = nil, name: String = "Knob Consumer Control")
        -> DeviceDescription
    {
        DeviceDescription(
            name: name, bus: .usb, vendor: 0x077d, product: 0x0410, uniq: uniq, phys: phys,
            codes: [.synReport, .mute, .playPause, .nextSong])
    }

    public static func profiles(_ descriptions: [(DeviceDescription, String)], udev: [String: String] = [:]) -> [DeviceProfile] {
        RoleClassifier.pair(descriptions.map { RoleClassifier.profile(for: $0.0, node: $0.1, udevRole: udev[$0.1]) })
    }
}
