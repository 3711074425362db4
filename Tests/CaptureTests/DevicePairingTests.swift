import EvcaptureTesting
import Testing
import Evdev
import Capture

/// An encoder and its push switch on separate event nodes of one physical device, paired by
/// their parent (`RoleClassifier.pair`).
@Suite struct DevicePairingTests {
    /// The PowerMate's real description, as interface 0 of a USB device.
    static func encoder(phys: String? = "usb-0000:00:14.0-2/input0", uniq: String? = nil) throws -> DeviceDescription {
        var d = try EvemuRecording.load(path: Fixtures.path("griffin-powermate.evemu")).description
        d.phys = phys
        d.uniq = uniq
        return d
    }

    /// Its push switch as interface 1: a consumer-control node with mute, play/pause and
    /// next-song keys (synthetic: such knobs over-advertise their second interface).
    static func pushSwitch(phys: String? = "usb-0000:00:14.0-2/input1", uniq: String? = nil, name: String = "Knob Consumer Control")
        -> DeviceDescription
    {
        DeviceDescription(
            name: name, bus: .usb, vendor: 0x077d, product: 0x0410, uniq: uniq, phys: phys,
            codes: [.synReport, .mute, .playPause, .nextSong])
    }

    static func profiles(_ descriptions: [(DeviceDescription, String)], udev: [String: String] = [:]) -> [DeviceProfile] {
        RoleClassifier.pair(descriptions.map { RoleClassifier.profile(for: $0.0, node: $0.1, udevRole: udev[$0.1]) })
    }

    @Test func theParentIsThePhysPathWithoutItsInterface() throws {
        #expect(RoleClassifier.parent(of: try Self.encoder()) == "usb-0000:00:14.0-2")
        #expect(RoleClassifier.parent(of: Self.pushSwitch()) == "usb-0000:00:14.0-2")
        #expect(RoleClassifier.parent(of: Self.pushSwitch(phys: "usb-0000:00:14.0-2/input1", uniq: "00:11:22:33:44:55"))
            == "usb-0000:00:14.0-2 (00:11:22:33:44:55)")
        #expect(RoleClassifier.parent(of: Self.pushSwitch(phys: "isa0060/serio0")) == "isa0060/serio0")
        #expect(RoleClassifier.parent(of: Self.pushSwitch(phys: nil)) == nil)
        #expect(RoleClassifier.parent(of: Self.pushSwitch(phys: "")) == nil)
    }

    @Test func thePushIsTheEncodersLightPress() throws {
        let alone = RoleClassifier.profile(for: Self.pushSwitch(), node: "/dev/input/event6")
        #expect(alone.roles.isEmpty && alone.kind == .other && !alone.isDedicated)

        let paired = Self.profiles([(try Self.encoder(), "/dev/input/event5"), (Self.pushSwitch(), "/dev/input/event6")])
        let (dial, push) = (paired[0], paired[1])
        #expect(push.role(of: .mute) == .lightPress && push.role(of: .playPause) == .lightPress)
        #expect(push.role(of: .nextSong) == .ignore)  // not a push key: left alone
        #expect(push.roles[.mute]?.source == .default)
        #expect(push.roles[.mute]?.reason == "push switch of \"Griffin PowerMate\" (/dev/input/event5), same parent usb-0000:00:14.0-2")
        #expect(push.kind == .encoder && push.isDedicated)  // grabbed like its encoder: no mute on the desktop
        #expect(push.partners == [DevicePartner(node: "/dev/input/event5", name: "Griffin PowerMate", relation: .encoder, parent: "usb-0000:00:14.0-2")])
        #expect(dial.partners == [DevicePartner(node: "/dev/input/event6", name: "Knob Consumer Control", relation: .pushSwitch, parent: "usb-0000:00:14.0-2")])
        // The encoder's own roles are untouched.
        #expect(dial.roles == RoleClassifier.profile(for: try Self.encoder(), node: "/dev/input/event5").roles)

        // The order the nodes come in does not matter.
        let reversed = Self.profiles([(Self.pushSwitch(), "/dev/input/event6"), (try Self.encoder(), "/dev/input/event5")])
        #expect(reversed[0] == push && reversed[1] == dial)
    }

    @Test func theDecoderSeesThePairedPress() throws {
        let paired = Self.profiles([(try Self.encoder(), "e5"), (Self.pushSwitch(), "e6")])
        var decoder = SliderDecoder(profile: paired[1])
        #expect(decoder.hasLightPress && !decoder.isSliderCapable)
        #expect(decoder.decode(frame(0, (.mute, 1))) == [.lightPress])
    }

    @Test func nodesOfOtherDevicesAreNotPaired() throws {
        // Another USB port.
        let elsewhere = Self.profiles([(try Self.encoder(), "e5"), (Self.pushSwitch(phys: "usb-0000:00:14.0-3/input1"), "e6")])
        #expect(elsewhere[1].roles.isEmpty && elsewhere[0].partners.isEmpty && elsewhere[1].partners.isEmpty)
        // Two Bluetooth devices on one adapter share its address as phys; uniq tells them apart.
        let bt = Self.profiles([
            (try Self.encoder(phys: "00:1a:7d:da:71:13", uniq: "aa:bb:cc:dd:ee:01"), "e5"),
            (Self.pushSwitch(phys: "00:1a:7d:da:71:13", uniq: "aa:bb:cc:dd:ee:02"), "e6"),
        ])
        #expect(bt[1].roles.isEmpty)
        // No phys (uinput, the rotary-encoder driver): never paired by parent.
        let unknown = Self.profiles([(try Self.encoder(phys: nil), "e5"), (Self.pushSwitch(phys: nil), "e6")])
        #expect(unknown[1].roles.isEmpty)
    }

    @Test func keyboardsAndPointersDoNotPair() throws {
        // A combo receiver: a mouse (its wheel is a slider) and a consumer-control node. A
        // mouse wheel has no push switch on another node.
        let mouse = DeviceDescription(
            name: "Receiver Mouse", bus: .usb, phys: "usb-0000:00:14.0-4/input1", codes: [.synReport, .relX, .relY, .relWheel, .btnLeft])
        let combo = Self.profiles([(mouse, "e7"), (Self.pushSwitch(phys: "usb-0000:00:14.0-4/input2"), "e8")])
        #expect(combo[0].kind == .pointer && combo[1].roles.isEmpty)
        // A full keyboard next to an encoder keeps only its capture keys (spec §2).
        let fixtureKeyboard = try EvemuRecording.load(path: Fixtures.path("usb-keyboard-typing-and-volume.evemu")).description
        var keyboard = fixtureKeyboard
        keyboard.phys = "usb-0000:00:14.0-2/input1"
        let withKeyboard = Self.profiles([(try Self.encoder(), "e5"), (keyboard, "e6")])
        #expect(withKeyboard[1].kind == .keyboard && withKeyboard[1].role(of: .enter) == .ignore && withKeyboard[1].partners.isEmpty)
    }

    @Test func rulesStillDecide() throws {
        // An explicit role (even ignore) from udev or the config is kept; so is `nograb`.
        let paired = Self.profiles(
            [(try Self.encoder(), "e5"), (Self.pushSwitch(), "e6")], udev: ["e6": "KEY_MUTE=ignore,KEY_PLAYPAUSE=primary,nograb"])
        #expect(paired[1].role(of: .mute) == .ignore && paired[1].role(of: .playPause) == .primary)
        #expect(paired[1].partners.isEmpty)  // no free push key left: nothing to pair
        let nograb = Self.profiles([(try Self.encoder(), "e5"), (Self.pushSwitch(), "e6")], udev: ["e6": "nograb"])
        #expect(nograb[1].role(of: .mute) == .lightPress && !nograb[1].isDedicated)
    }
}
