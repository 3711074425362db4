import EvcaptureTesting
import Testing
@testable import Evdev
import Vocabulary
@testable import Roles

private func fixture(_ name: String) throws -> DeviceDescription {
    try EvemuRecording.load(path: Fixtures.evemu(name)).description
}

/// Role name per code name: the form the tests state expectations in.
private func table(_ p: DeviceProfile) -> [String: String] {
    var result: [String: String] = [:]
    for (code, assignment) in p.roles {
        result[code.name] =
            assignment.role == .slider && assignment.step != 0
            ? "slider\(assignment.step > 0 ? "+" : "")\(assignment.step)" : assignment.role.rawValue
    }
    return result
}

@Suite struct RolesFixtureTests {
    struct Expectation: Sendable, CustomTestStringConvertible {
        var fixture: String
        var kind: DeviceKind
        var roles: [String: String]
        var dedicated: Bool
        var headset = false
        var testDescription: String { fixture }
    }

    static let expectations: [Expectation] = [
        Expectation(
            fixture: "gpio-keys-volume-keys", kind: .buttons,
            roles: ["KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary"], dedicated: true),
        Expectation(
            fixture: "thinkpad-extra-buttons-camera", kind: .buttons,
            roles: ["KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary", "KEY_CAMERA": "primary"], dedicated: false),
        Expectation(
            fixture: "logitech-media-keyboard-elite-volume-wheel", kind: .buttons,
            roles: ["KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary"], dedicated: false),
        Expectation(
            fixture: "huion-q620m-dial", kind: .dial,
            roles: ["BTN_0": "light-press", "REL_WHEEL": "slider", "REL_WHEEL_HI_RES": "slider"], dedicated: true),
        Expectation(
            fixture: "bluez-avrcp-headset", kind: .headset,
            roles: [
                "KEY_PLAYCD": "primary", "KEY_PAUSECD": "primary",
                "KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary",
            ], dedicated: true, headset: true),
        Expectation(fixture: "rotary-encoder-rel-x", kind: .encoder, roles: ["REL_X": "slider"], dedicated: true),
        Expectation(
            fixture: "rotary-encoder-push-switch-gpio-keys", kind: .encoder, roles: ["KEY_ENTER": "light-press"],
            dedicated: true),
        Expectation(
            fixture: "griffin-powermate", kind: .dial, roles: ["BTN_0": "light-press", "REL_DIAL": "slider"],
            dedicated: true),
        Expectation(
            fixture: "usb-keyboard-typing-and-volume", kind: .keyboard,
            roles: ["KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary"], dedicated: false),
    ]

    @Test(arguments: expectations)
    func capabilityDefaults(_ e: Expectation) throws {
        let p = RoleClassifier.profile(for: try fixture(e.fixture), node: "/dev/input/event7")
        #expect(p.kind == e.kind)
        #expect(table(p) == e.roles)
        #expect(p.isDedicated == e.dedicated)
        #expect(p.isHeadset == e.headset)
        #expect(p.node == "/dev/input/event7")
        #expect(p.warnings.isEmpty)
        // The PowerMate is in the known-device table; the rest are read from capabilities.
        let source: RoleSource = e.fixture == "griffin-powermate" ? .knownDevice : .default
        #expect(p.roles.values.allSatisfy { $0.source == source && !$0.reason.isEmpty })
    }

    @Test func reasonsSayWhy() throws {
        let p = RoleClassifier.profile(for: try fixture("bluez-avrcp-headset"), node: "n")
        #expect(p.roles[.playCD]?.reason.contains("headset play/pause key") == true)
        #expect(p.roles[.playCD]?.reason.contains("AVRCP") == true)
        let k = RoleClassifier.profile(for: try fixture("usb-keyboard-typing-and-volume"), node: "n")
        #expect(k.roles[.volumeUp]?.reason == "volume up key; full keyboard (has letter keys)")
        #expect(k.role(of: .keyA) == .ignore && k.role(of: .mute) == .ignore)
    }
}

@Suite struct RolesOverrideTests {
    @Test func udevKnobTurnsVolumeKeysIntoASlider() throws {
        let d = try fixture("logitech-media-keyboard-elite-volume-wheel")
        let p = RoleClassifier.profile(for: d, node: "n", udevRole: "knob")
        #expect(p.kind == .knob && p.isDedicated && !p.isHeadset)
        #expect(table(p) == ["KEY_VOLUMEUP": "slider+1", "KEY_VOLUMEDOWN": "slider-1", "KEY_MUTE": "light-press"])
        #expect(p.roles.values.allSatisfy { $0.source == .udev })
        #expect(p.roles[.volumeUp]?.reason.contains("EVCAPTURE_ROLE: knob") == true)
    }

    @Test func configOverridesUdevWhichOverridesDefaults() throws {
        let d = try fixture("gpio-keys-volume-keys")
        // udev: a knob, but KEY_POWER is the push.
        let u = RoleClassifier.profile(for: d, node: "n", udevRole: " knob , KEY_POWER=light-press ")
        #expect(table(u) == ["KEY_VOLUMEUP": "slider+1", "KEY_VOLUMEDOWN": "slider-1", "KEY_POWER": "light-press"])
        #expect(u.roles[.power]?.source == .udev && u.roles[.power]?.reason == "EVCAPTURE_ROLE: KEY_POWER=light-press")

        // config per-code beats udev per-code; the udev kind stays.
        let c = RoleClassifier.profile(
            for: d, node: "n", udevRole: "knob,KEY_POWER=light-press",
            config: RoleOverrides(codes: [.power: CodeRole(.primary), .volumeUp: CodeRole(.ignore)]))
        #expect(table(c) == ["KEY_VOLUMEUP": "ignore", "KEY_VOLUMEDOWN": "slider-1", "KEY_POWER": "primary"])
        #expect(c.roles[.power]?.source == .config && c.roles[.volumeDown]?.source == .udev)
        #expect(c.role(of: .volumeUp) == .ignore && c.roles[.volumeUp]?.reason == "config: KEY_VOLUMEUP=ignore")

        // a config kind replaces everything udev said, then config codes apply.
        let k = RoleClassifier.profile(
            for: d, node: "n", udevRole: "knob,KEY_POWER=light-press",
            config: RoleOverrides(kind: .shutter, codes: [.volumeUp: CodeRole(.secondary)], dedicated: false))
        #expect(table(k) == ["KEY_VOLUMEUP": "secondary", "KEY_VOLUMEDOWN": "primary"])
        #expect(k.kind == .shutter && !k.isDedicated)
        #expect(k.roles[.volumeDown]?.source == .config)
    }

    @Test func keyboardsAreGrabbedOnlyWhenConfigured() throws {
        let d = try fixture("usb-keyboard-typing-and-volume")
        #expect(!RoleClassifier.profile(for: d, node: "n").isDedicated)
        #expect(RoleClassifier.profile(for: d, node: "n", udevRole: "grab").isDedicated)
        #expect(RoleClassifier.profile(for: d, node: "n", config: RoleOverrides(dedicated: true)).isDedicated)
        #expect(!RoleClassifier.profile(for: d, node: "n", udevRole: "grab", config: RoleOverrides(dedicated: false)).isDedicated)
    }

    @Test func udevIgnoreAndShutterAndDial() throws {
        let pm = try fixture("griffin-powermate")
        let ignored = RoleClassifier.profile(for: pm, node: "n", udevRole: "ignore")
        #expect(ignored.kind == .ignore && !ignored.isDedicated)
        #expect(ignored.roles.values.allSatisfy { $0.role == .ignore && $0.source == .udev })
        #expect(ignored.role(of: .relDial) == .ignore)

        let kb = try fixture("usb-keyboard-typing-and-volume")
        let shutter = RoleClassifier.profile(for: kb, node: "n", udevRole: "shutter")
        #expect(
            table(shutter) == [
                "KEY_VOLUMEUP": "primary", "KEY_VOLUMEDOWN": "primary", "KEY_ENTER": "primary",
                "KEY_KPENTER": "primary", "KEY_SPACE": "primary", "KEY_PAGEUP": "primary",
                "KEY_PAGEDOWN": "primary", "KEY_PLAYPAUSE": "primary",
            ])
        #expect(shutter.isDedicated)

        let enc = RoleClassifier.profile(for: try fixture("rotary-encoder-rel-x"), node: "n", udevRole: "dial")
        #expect(table(enc).isEmpty)  // a dial has no REL_X role: the override really replaced the defaults
    }

    @Test func badUdevItemsAreReportedAndSkipped() throws {
        let d = try fixture("griffin-powermate")
        let p = RoleClassifier.profile(for: d, node: "n", udevRole: "wobble,KEY_NOPE=primary,BTN_0=zoom,KEY_A=primary")
        #expect(
            p.warnings == [
                "EVCAPTURE_ROLE: unknown item \"wobble\" (device kinds: buttons, shutter, headset, knob, dial, encoder, keyboard, pointer, ignore; or CODE=role)",
                "EVCAPTURE_ROLE: unknown event code \"KEY_NOPE\"",
                "EVCAPTURE_ROLE: unknown role \"zoom\" for BTN_0 (use primary, secondary, light-press, slider, slider+1, slider-1, slider:counter, slider:rate or ignore)",
                "EVCAPTURE_ROLE: KEY_A is not a code this device sends",
            ])
        // defaults stand for the rest
        #expect(p.role(of: .btn0) == .lightPress && p.role(of: .relDial) == .slider)
    }

    @Test func codeRoleSpellingsRoundTrip() {
        for text in ["primary", "secondary", "light-press", "slider", "slider+1", "slider-1", "slider:counter", "ignore"] {
            #expect(CodeRole(parsing: text)?.spelling == text)
        }
        #expect(CodeRole(parsing: "shutter") == nil)
        #expect(CodeRole(parsing: "slider:counter") == CodeRole(.slider, reading: .counter))
        #expect(CodeRole(parsing: "counter") == nil && CodeRole(parsing: "light-press:counter") == nil)
    }

    @Test func aCounterFlagOnlyFitsARelativeAxis() {
        #expect((try? CodeRole.parse("slider:counter", for: .relDial).get()) == CodeRole(.slider, reading: .counter))
        #expect(throws: RoleSyntaxError("KEY_ENTER=slider:counter: only relative axes (REL_*) can be position counters")) {
            try CodeRole.parse("slider:counter", for: .enter).get()
        }
        #expect(throws: RoleSyntaxError("ABS_X=slider:counter: only relative axes (REL_*) can be position counters")) {
            try CodeRole.parse("slider:counter", for: .abs(0)).get()
        }
        #expect(throws: RoleSyntaxError("REL_X=slider+1: a step per press needs a key (KEY_*, BTN_*)")) {
            try CodeRole.parse("slider+1", for: .relX).get()
        }
        // In EVCAPTURE_ROLE a bad item is a warning with the device, and is skipped.
        let jog = DeviceDescription(name: "jog", bus: .usb, codes: [.synReport, .relDial, .relWheel, .enter])
        let p = RoleClassifier.profile(for: jog, node: "n", udevRole: "dial,REL_DIAL=slider:counter,KEY_ENTER=slider:counter")
        #expect(p.warnings == ["EVCAPTURE_ROLE: KEY_ENTER=slider:counter: only relative axes (REL_*) can be position counters"])
        #expect(
            p.roles[.relDial]
                == RoleAssignment(role: .slider, source: .udev, reason: "EVCAPTURE_ROLE: REL_DIAL=slider:counter", reading: .counter))
        #expect(p.roles[.enter] == nil)
        // The config overrides udev, counter flag included.
        let plain = RoleClassifier.profile(
            for: jog, node: "n", udevRole: "dial,REL_DIAL=slider:counter", config: RoleOverrides(codes: [.relDial: CodeRole(.slider)]))
        #expect(plain.roles[.relDial]?.isCounter == false && plain.roles[.relDial]?.source == .config)
    }

    @Test func detectionByCapabilities() {
        // A Bluetooth presenter: remote shutter, both page keys primary.
        let presenter = DeviceDescription(
            name: "R400 Presenter", bus: .bluetooth, codes: [.synReport, .pageUp, .pageDown])
        let p = RoleClassifier.profile(for: presenter, node: "n")
        #expect(p.kind == .shutter && p.isDedicated)
        #expect(table(p) == ["KEY_PAGEUP": "primary", "KEY_PAGEDOWN": "primary"])
        // An encoder with an absolute axis and no name hint, on the host bus.
        let absEncoder = DeviceDescription(
            name: "knob", bus: .host, codes: [.synReport, .abs(0)], absInfo: [0: AbsInfo(minimum: 0, maximum: 23)])
        #expect(table(RoleClassifier.profile(for: absEncoder, node: "n")) == ["ABS_X": "slider"])
        // A mouse: the wheel is a slider, the mouse is never grabbed.
        let mouse = DeviceDescription(
            name: "USB Mouse", bus: .usb, codes: [.synReport, .btnLeft, .relX, .relY, .relWheel, .relWheelHiRes])
        let m = RoleClassifier.profile(for: mouse, node: "n")
        #expect(m.kind == .pointer && !m.isDedicated)
        #expect(table(m) == ["REL_WHEEL": "slider", "REL_WHEEL_HI_RES": "slider"])
        // KEY_CAMERA_FOCUS is the light press.
        let cam = DeviceDescription(name: "camera-keys", bus: .host, codes: [.camera, .cameraFocus])
        #expect(table(RoleClassifier.profile(for: cam, node: "n")) == ["KEY_CAMERA": "primary", "KEY_CAMERA_FOCUS": "light-press"])
        // The AVRCP name on USB is not a headset.
        let fake = DeviceDescription(name: "X (AVRCP)", bus: .usb, codes: [.playCD])
        #expect(RoleClassifier.profile(for: fake, node: "n").kind == .other)
    }
}
