import EvcaptureTesting
import Testing
import V4L2

/// V4L2 controls on the real vivid driver: enumeration, menus, set/get of integer, boolean and
/// menu controls, and the typed errors for read-only, inactive and write-only controls.
/// vivid is loaded by the guest (`n_devs=1`); its capture node is `vivid-000-vid-cap`.
@Suite(.systemTest, .serialized)
struct V4L2VividTests {
    let node: String
    let device: V4L2Device
    let controls: [String: ControlDescription]

    init() throws {
        node = try #require(vividNode(), "no vivid-000-vid-cap in /sys/class/video4linux (the guest loads vivid)")
        device = try V4L2Device(path: node)
        controls = Dictionary(try device.controls().map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    @Test func capabilities() {
        #expect(device.capabilities.driver == "vivid")
        #expect(device.capabilities.canCapture)
        #expect(device.capabilities.busInfo.hasPrefix("platform:vivid"))
    }

    @Test func enumeratesWithV4L2CtlNamesTypesAndRanges() throws {
        let brightness = try #require(controls["brightness"])
        #expect(brightness.id == .brightness)
        #expect(brightness.type == .integer)
        #expect((brightness.minimum, brightness.maximum, brightness.step, brightness.defaultValue) == (0, 255, 1, 128))
        #expect(brightness.flags.contains(.slider))
        #expect(controls["mute"]?.type == .boolean)
        #expect(controls["integer_64_bits"]?.type == .integer64)
        #expect(controls["string"]?.type == .string)
        #expect(controls["string"]?.hasIntegerValue == false)
        #expect(controls["read_only_integer_32_bits"]?.flags.contains(.readOnly) == true)
        #expect(controls["button"]?.flags.contains(.writeOnly) == true)
        // Compound controls come too (V4L2_CTRL_FLAG_NEXT_COMPOUND).
        #expect(controls["u16_8x16_matrix"] != nil)
        // No class headings in the list.
        #expect(!controls.values.contains { $0.type == .controlClass })
    }

    @Test func menusSkipTheIndicesTheDriverSkips() throws {
        let menu = try #require(controls["menu"])
        #expect(menu.type == .menu)
        #expect(menu.menu.map(\.index) == [1, 3, 4])
        #expect(menu.menu.map(\.name) == ["Menu Item 1", "Menu Item 3", "Menu Item 4"])
        let intMenu = try #require(controls["integer_menu"])
        #expect(intMenu.type == .integerMenu)
        #expect(intMenu.menu.compactMap(\.value) == [2, 3, 5, 8, 13, 21, 42])
        #expect(intMenu.menu.first?.index == 2)
    }

    @Test func setAndGetInteger() throws {
        #expect(try device.set(.brightness, to: 200) == 200)
        #expect(try device.value(of: .brightness) == 200)
        // Clamped before it is written.
        #expect(try device.set(.contrast, to: 300) == 255)
        #expect(try device.value(of: .contrast) == 255)
        let i64 = try #require(controls["integer_64_bits"])
        #expect(try device.set(i64.id, to: 1 << 40) == 1 << 40)
        #expect(try device.value(of: i64.id) == 1 << 40)
    }

    @Test func setAndGetBoolean() throws {
        let mute = try #require(controls["mute"])
        #expect(try device.set(mute.id, to: 1) == 1)
        #expect(try device.value(of: mute.id) == 1)
        #expect(try device.set(mute.id, to: 0) == 0)
        #expect(try device.value(of: mute.id) == 0)
    }

    @Test func setAndGetMenus() throws {
        let menu = try #require(controls["menu"])
        #expect(try device.set(menu.id, to: 4) == 4)
        // 2 is not offered: the nearest offered index (the lower one on a tie).
        #expect(try device.set(menu.id, to: 2) == 1)
        #expect(try device.value(of: menu.id) == 1)
        let pattern = try #require(controls["test_pattern"])
        #expect(try device.set(pattern.id, to: 2) == 2)
        let intMenu = try #require(controls["integer_menu"])
        #expect(try device.set(intMenu.id, to: 6) == 6)
        #expect(try device.value(of: intMenu.id) == 6)
    }

    @Test func readOnlyControlGivesTypedError() throws {
        let ro = try #require(controls["read_only_integer_32_bits"])
        let error = try #require(throws: V4L2Error.self) { try device.set(ro.id, to: 5) }
        #expect(error.code == .readOnly)
        #expect(error.control == "read_only_integer_32_bits")
        #expect(error.device == node)
        #expect("\(error)".contains("read_only_integer_32_bits: read-only"))
        // Still readable, and we read what v4l2-ctl reads (vivid counts it up while it
        // streams, so earlier tests decide the value; nothing streams now).
        let ours = try device.value(of: ro.id)
        let theirs = try run("v4l2-ctl", "-d", node, "--get-ctrl", "read_only_integer_32_bits")
        #expect(theirs.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "read_only_integer_32_bits: \(ours)", "\(theirs)")
        #expect((0...255).contains(ours))
    }

    @Test func inactiveControlGivesTypedError() throws {
        // gain is inactive while gain_automatic is on (vivid's default).
        let auto = try #require(controls["gain_automatic"])
        try device.set(auto.id, to: 1)
        let gain = try #require(controls["gain"])
        let error = try #require(throws: V4L2Error.self) { try device.set(gain.id, to: 10) }
        #expect(error.code == .inactive)
        #expect(error.control == "gain")
        // Manual gain makes it settable: the flags are looked up fresh.
        try device.set(auto.id, to: 0)
        #expect(try device.set(gain.id, to: 10) == 10)
        try device.set(auto.id, to: 1)
    }

    @Test func writeOnlyButtonHasNoValue() throws {
        let button = try #require(controls["button"])
        let error = try #require(throws: V4L2Error.self) { try device.value(of: button.id) }
        #expect(error.code == .writeOnly)
        let string = try #require(controls["string"])
        let e2 = try #require(throws: V4L2Error.self) { try device.set(string.id, to: 1) }
        #expect(e2.code == .unsupportedType)
    }

    @Test func unknownControlIsNoSuchControl() throws {
        let error = try #require(throws: V4L2Error.self) { try device.value(of: ControlID(0x0098_09ff)) }
        #expect(error.code == .noSuchControl)
        #expect(error.errno == 22)  // EINVAL
    }
}
