import Vocabulary

/// Devices whose capabilities do not say what they are, and what evcapture knows about them:
/// data read by the classifier itself (as libinput reads its quirks), so a device behaves the
/// same run from source, replayed from a recording and installed. Each entry's roles are
/// written as the udev property `EVCAPTURE_ROLE` is (one syntax, one parser); udev rules and
/// the config file still override them (docs/behaviour.md#roles).
struct KnownDevice: Sendable, Hashable {
    /// What identifies the device.
    public enum Match: Sendable, Hashable {
        /// USB vendor and product ids.
        case usb(vendor: UInt16, product: UInt16)
        /// A Bluetooth device whose name starts with the prefix.
        case bluetoothNamePrefix(String)
    }

    public var match: Match
    /// A code the device must send: a product with several interfaces (a knob's push switch
    /// on its own node, say) is matched on the one the entry is about.
    var requires: EventCode
    /// The product, for the reason shown by `evcapture devices`.
    public var product: String
    /// Roles in the `EVCAPTURE_ROLE` syntax.
    public var roles: String

    public func matches(_ d: DeviceDescription) -> Bool {
        guard d.has(requires) else { return false }
        return switch match {
        case .usb(let vendor, let product): d.bus == .usb && d.vendor == vendor && d.product == product
        case .bluetoothNamePrefix(let prefix): d.bus == .bluetooth && d.name.hasPrefix(prefix)
        }
    }

    /// The table. Devices the capability defaults already read right (AVRCP headsets, the
    /// kernel's rotary encoders, gpio-keys) are not in it.
    public static let table: [KnownDevice] = [
        // Griffin PowerMate: REL_DIAL per detent, BTN_0 when pressed.
        KnownDevice(match: .usb(vendor: 0x077d, product: 0x0410), requires: .relDial, product: "Griffin PowerMate", roles: "dial"),
        // Contour ShuttleXpress and ShuttlePro v2: the jog wheel's REL_DIAL carries an 8-bit
        // position counter (1…255, wrapping, repeated unchanged with every report), not steps;
        // the spring-loaded shuttle ring reports where it is held (REL_WHEEL −7…+7, and
        // REL_WHEEL_HI_RES ×120 where the kernel adds it), absent once back at rest: a rate
        // while held, not detents.
        KnownDevice(
            match: .usb(vendor: 0x0b33, product: 0x0020), requires: .relDial, product: "Contour ShuttleXpress",
            roles: "dial,REL_DIAL=slider:counter,REL_WHEEL=slider:rate"),
        KnownDevice(
            match: .usb(vendor: 0x0b33, product: 0x0030), requires: .relDial, product: "Contour ShuttlePro v2",
            roles: "dial,REL_DIAL=slider:counter,REL_WHEEL=slider:rate"),
        // The common aluminium STM32 USB volume knob: a KEY_VOLUMEUP/DOWN press per detent,
        // KEY_MUTE on push.
        KnownDevice(
            match: .usb(vendor: 0x0483, product: 0x572d), requires: .volumeUp, product: "STMicroelectronics USB Volume Control",
            roles: "knob"),
        // Bluetooth selfie remotes: they describe themselves as a whole keyboard but only send
        // KEY_VOLUMEUP (iOS button) and KEY_ENTER (Android button).
        KnownDevice(match: .bluetoothNamePrefix("AB Shutter3"), requires: .volumeUp, product: "AB Shutter3 remote", roles: "shutter"),
    ]

    /// The entry for `d`, if it is a known device.
    public static func entry(for d: DeviceDescription) -> KnownDevice? {
        table.first { $0.matches(d) }
    }
}
