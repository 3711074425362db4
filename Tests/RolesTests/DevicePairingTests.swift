import EvcaptureTesting
import Testing
import Evdev
import Vocabulary
import Roles

/// An encoder and its push switch on separate event nodes of one physical device, paired by
/// their parent (`RoleClassifier.pair`).
@Suite struct DevicePairingTests {

    @Test func theParentIsThePhysPathWithoutItsInterface() throws {
        #expect(RoleClassifier.parent(of: try PairedKnob.encoder()) == "usb-0000:00:14.0-2")
        #expect(RoleClassifier.parent(of: PairedKnob.pushSwitch()) == "usb-0000:00:14.0-2")
        #expect(
            RoleClassifier.parent(of: PairedKnob.pushSwitch(phys: "usb-0000:00:14.0-2/input1", uniq: "00:11:22:33:44:55"))
                == "usb-0000:00:14.0-2 (00:11:22:33:44:55)")
        #expect(RoleClassifier.parent(of: PairedKnob.pushSwitch(phys: "isa0060/serio0")) == "isa0060/serio0")
        #expect(RoleClassifier.parent(of: PairedKnob.pushSwitch(phys: nil)) == nil)
        #expect(RoleClassifier.parent(of: PairedKnob.pushSwitch(phys: "")) == nil)
    }

    @Test func thePushIsTheEncodersLightPress() throws {
        let alone = RoleClassifier.profile(for: PairedKnob.pushSwitch(), node: "/dev/input/event6")
        #expect(alone.roles.isEmpty && alone.kind == .other && !alone.isDedicated)

        let paired = PairedKnob.profiles([(try PairedKnob.encoder(), "/dev/input/event5"), (PairedKnob.pushSwitch(), "/dev/input/event6")])
        let (dial, push) = (paired[0], paired[1])
        #expect(push.role(of: .mute) == .lightPress && push.role(of: .playPause) == .lightPress)
        #expect(push.role(of: .nextSong) == .ignore)  // not a push key: left alone
        #expect(push.roles[.mute]?.source == .default)
        #expect(push.roles[.mute]?.reason == "push switch of \"Griffin PowerMate\" (/dev/input/event5), same parent usb-0000:00:14.0-2")
        #expect(push.kind == .encoder && push.isDedicated)  // grabbed like its encoder: no mute on the desktop
        #expect(
            push.partners == [
                DevicePartner(node: "/dev/input/event5", name: "Griffin PowerMate", relation: .encoder, parent: "usb-0000:00:14.0-2")
            ])
        #expect(
            dial.partners == [
                DevicePartner(node: "/dev/input/event6", name: "Knob Consumer Control", relation: .pushSwitch, parent: "usb-0000:00:14.0-2")
            ])
        // The encoder's own roles are untouched.
        #expect(dial.roles == RoleClassifier.profile(for: try PairedKnob.encoder(), node: "/dev/input/event5").roles)

        // The order the nodes come in does not matter.
        let reversed = PairedKnob.profiles([
            (PairedKnob.pushSwitch(), "/dev/input/event6"), (try PairedKnob.encoder(), "/dev/input/event5"),
        ])
        #expect(reversed[0] == push && reversed[1] == dial)
    }

    @Test func nodesOfOtherDevicesAreNotPaired() throws {
        // Another USB port.
        let elsewhere = PairedKnob.profiles([
            (try PairedKnob.encoder(), "e5"), (PairedKnob.pushSwitch(phys: "usb-0000:00:14.0-3/input1"), "e6"),
        ])
        #expect(elsewhere[1].roles.isEmpty && elsewhere[0].partners.isEmpty && elsewhere[1].partners.isEmpty)
        // Two Bluetooth devices on one adapter share its address as phys; uniq tells them apart.
        let bt = PairedKnob.profiles([
            (try PairedKnob.encoder(phys: "00:1a:7d:da:71:13", uniq: "aa:bb:cc:dd:ee:01"), "e5"),
            (PairedKnob.pushSwitch(phys: "00:1a:7d:da:71:13", uniq: "aa:bb:cc:dd:ee:02"), "e6"),
        ])
        #expect(bt[1].roles.isEmpty)
        // No phys (uinput, the rotary-encoder driver): never paired by parent.
        let unknown = PairedKnob.profiles([(try PairedKnob.encoder(phys: nil), "e5"), (PairedKnob.pushSwitch(phys: nil), "e6")])
        #expect(unknown[1].roles.isEmpty)
    }

    @Test func keyboardsAndPointersDoNotPair() throws {
        // A combo receiver: a mouse (its wheel is a slider) and a consumer-control node. A
        // mouse wheel has no push switch on another node.
        let mouse = DeviceDescription(
            name: "Receiver Mouse", bus: .usb, phys: "usb-0000:00:14.0-4/input1", codes: [.synReport, .relX, .relY, .relWheel, .btnLeft])
        let combo = PairedKnob.profiles([(mouse, "e7"), (PairedKnob.pushSwitch(phys: "usb-0000:00:14.0-4/input2"), "e8")])
        #expect(combo[0].kind == .pointer && combo[1].roles.isEmpty)
        // A full keyboard next to an encoder keeps only its capture keys (docs/behaviour.md#roles).
        let fixtureKeyboard = try EvemuRecording.load(path: Fixtures.path("usb-keyboard-typing-and-volume.evemu")).description
        var keyboard = fixtureKeyboard
        keyboard.phys = "usb-0000:00:14.0-2/input1"
        let withKeyboard = PairedKnob.profiles([(try PairedKnob.encoder(), "e5"), (keyboard, "e6")])
        #expect(withKeyboard[1].kind == .keyboard && withKeyboard[1].role(of: .enter) == .ignore && withKeyboard[1].partners.isEmpty)
    }

    @Test func rulesStillDecide() throws {
        // An explicit role (even ignore) from udev or the config is kept; so is `nograb`.
        let paired = PairedKnob.profiles(
            [(try PairedKnob.encoder(), "e5"), (PairedKnob.pushSwitch(), "e6")],
            udev: ["e6": "KEY_MUTE=ignore,KEY_PLAYPAUSE=primary,nograb"])
        #expect(paired[1].role(of: .mute) == .ignore && paired[1].role(of: .playPause) == .primary)
        #expect(paired[1].partners.isEmpty)  // no free push key left: nothing to pair
        let nograb = PairedKnob.profiles([(try PairedKnob.encoder(), "e5"), (PairedKnob.pushSwitch(), "e6")], udev: ["e6": "nograb"])
        #expect(nograb[1].role(of: .mute) == .lightPress && !nograb[1].isDedicated)
    }
}
