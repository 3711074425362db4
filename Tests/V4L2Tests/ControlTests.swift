#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import V4L2

@Suite struct ControlNameTests {
    @Test(arguments: [
        ("Zoom, Absolute", "zoom_absolute"),
        ("Exposure Time, Absolute", "exposure_time_absolute"),
        ("Auto Exposure", "auto_exposure"),
        ("Read-Only Integer 32 Bits", "read_only_integer_32_bits"),
        ("Focus, Automatic Continuous", "focus_automatic_continuous"),
        ("  White Balance  Temperature, Auto ", "white_balance_temperature_auto"),
        ("U8 2x3x4x5 Array", "u8_2x3x4x5_array"),
        ("Power Line Frequency (50/60)", "power_line_frequency_50_60"),
        ("", ""),
        ("---", ""),
        ("Grün", "gr_n"),
    ])
    func v4l2CtlStyle(title: String, name: String) {
        #expect(controlName(title) == name)
    }
}

@Suite struct RoundingTests {
    @Test func clampsIntoRange() {
        #expect(roundToStep(9999, minimum: 100, maximum: 500, step: 1) == 500)
        #expect(roundToStep(-5, minimum: 100, maximum: 500, step: 1) == 100)
        #expect(roundToStep(321, minimum: 100, maximum: 500, step: 1) == 321)
    }

    @Test func roundsToNearestStepFromMinimumHalvesUp() {
        // pan_absolute: -36000 ... 36000 step 3600
        #expect(roundToStep(5000, minimum: -36000, maximum: 36000, step: 3600) == 3600)
        #expect(roundToStep(5400, minimum: -36000, maximum: 36000, step: 3600) == 7200)  // half: up
        #expect(roundToStep(5399, minimum: -36000, maximum: 36000, step: 3600) == 3600)
        #expect(roundToStep(-1, minimum: -36000, maximum: 36000, step: 3600) == 0)
        // focus_absolute: 0 ... 250 step 5
        #expect(roundToStep(12, minimum: 0, maximum: 250, step: 5) == 10)
        #expect(roundToStep(13, minimum: 0, maximum: 250, step: 5) == 15)
        // The grid starts at the minimum, not at zero.
        #expect(roundToStep(6, minimum: 1, maximum: 100, step: 4) == 5)
        #expect(roundToStep(7, minimum: 1, maximum: 100, step: 4) == 9)
    }

    @Test func maximumOffTheGridRoundsDownInside() {
        // 0 ... 10 step 4: the steps are 0, 4, 8; 10 is not one of them.
        #expect(roundToStep(10, minimum: 0, maximum: 10, step: 4) == 8)
        #expect(roundToStep(99, minimum: 0, maximum: 10, step: 4) == 8)
        #expect(roundToStep(9, minimum: 0, maximum: 10, step: 4) == 8)
    }

    @Test func exactAtTheEdgesOfInt64() {
        #expect(roundToStep(.max, minimum: .min, maximum: .max, step: 1) == .max)
        #expect(roundToStep(.min, minimum: .min, maximum: .max, step: 1) == .min)
        // Steps from Int64.min by 2^63: .min and 0 are the only values; .max is nearest 0.
        #expect(roundToStep(.max, minimum: .min, maximum: .max, step: UInt64(1) << 63) == 0)
        // Rounding up would leave the range (2^63): the last step inside it instead.
        #expect(roundToStep(.max - 1, minimum: 0, maximum: .max, step: 1 << 62) == 1 << 62)
    }

    @Test func menusGoToTheNearestOfferedIndex() {
        // vivid's "Menu": 1, 3, 4 offered (2 skipped).
        let menu = ControlDescription(
            id: ControlID(0x0098_f904), type: .menu, title: "Menu", minimum: 1, maximum: 4, defaultValue: 3,
            menu: [
                MenuEntry(index: 1, name: "Menu Item 1"), MenuEntry(index: 3, name: "Menu Item 3"),
                MenuEntry(index: 4, name: "Menu Item 4"),
            ])
        #expect(menu.normalize(2) == 1)  // tie: the lower one
        #expect(menu.normalize(3) == 3)
        #expect(menu.normalize(0) == 1)
        #expect(menu.normalize(99) == 4)
    }

    @Test func booleansAndBitmasks() {
        let bool = ControlDescription(
            id: ControlID(0x0098_0909), type: .boolean, title: "Mute", minimum: 0, maximum: 1, defaultValue: 0)
        #expect(bool.normalize(7) == 1)
        #expect(bool.normalize(0) == 0)
        #expect(bool.normalize(-1) == 1)
        let mask = ControlDescription(
            id: ControlID(0x0098_f906), type: .bitmask, title: "Bitmask", minimum: 0, maximum: 0x8040_2010,
            defaultValue: 0)
        #expect(mask.normalize(0xffff_ffff) == 0x8040_2010)
    }
}

@Suite struct FlagTests {
    @Test func setRefusals() {
        #expect(ControlFlags([]).refusalForSet == nil)
        #expect(ControlFlags([.slider, .update, .volatile]).refusalForSet == nil)
        #expect(ControlFlags.readOnly.refusalForSet == .readOnly)
        #expect(ControlFlags.inactive.refusalForSet == .inactive)
        #expect(ControlFlags.grabbed.refusalForSet == .busy)
        #expect(ControlFlags.disabled.refusalForSet == .noSuchControl)
        // Read-only wins over inactive: the more permanent reason.
        #expect(ControlFlags([.inactive, .readOnly]).refusalForSet == .readOnly)
    }

    @Test func getRefusals() {
        #expect(ControlFlags.writeOnly.refusalForGet == .writeOnly)
        #expect(ControlFlags.inactive.refusalForGet == nil)
        #expect(ControlFlags.readOnly.refusalForGet == nil)
    }

    @Test func namesAsV4L2CtlPrintsThem() {
        #expect(ControlFlags([.inactive, .volatile]).names == ["inactive", "volatile"])
        #expect(ControlFlags([.writeOnly, .executeOnWrite]).description == "write-only, execute-on-write")
        #expect(ControlFlags(rawValue: 0x1_0000).names == ["0x10000"])
    }
}

@Suite struct ErrnoMappingTests {
    @Test func controlErrnos() {
        #expect(V4L2Error.Code.forControl(errno: EACCES, operation: .set) == .readOnly)
        #expect(V4L2Error.Code.forControl(errno: EACCES, operation: .get) == .writeOnly)
        #expect(V4L2Error.Code.forControl(errno: EBUSY, operation: .set) == .busy)
        #expect(V4L2Error.Code.forControl(errno: ERANGE, operation: .set) == .outOfRange)
        #expect(V4L2Error.Code.forControl(errno: EINVAL, operation: .set) == .invalidValue)
        #expect(V4L2Error.Code.forControl(errno: EINVAL, operation: .query) == .noSuchControl)
        #expect(V4L2Error.Code.forControl(errno: ENODEV, operation: .get) == .deviceRemoved)
        #expect(V4L2Error.Code.forControl(errno: EIO, operation: .set) == .failed)
    }

    @Test func openErrnos() {
        #expect(V4L2Error.Code(errno: ENOENT) == .notFound)
        #expect(V4L2Error.Code(errno: EACCES) == .permissionDenied)
        #expect(V4L2Error.Code(errno: ENODEV) == .deviceRemoved)
    }

    @Test func descriptionSaysWhichControlOnWhichDeviceAndWhy() {
        let e = V4L2Error(
            code: .readOnly, errno: EACCES, device: "/dev/video0", control: "zoom_absolute", context: "setting it to 300")
        #expect(e.description == "/dev/video0: control zoom_absolute: read-only (setting it to 300: EACCES Permission denied)")
        let open = V4L2Error(code: .permissionDenied, errno: EACCES, device: "/dev/video3", context: "opening it")
        #expect(open.description == "/dev/video3: permission denied (opening it: EACCES Permission denied)")
    }

    @Test func openingAMissingNodeIsATypedError() {
        #expect {
            try V4L2Device(path: "/dev/evcapture-test-no-such-video-node")
        } throws: { error in
            (error as? V4L2Error)?.code == .notFound
                && "\(error)".contains("/dev/evcapture-test-no-such-video-node")
        }
    }

    @Test func aFileThatIsNotV4L2IsRefused() {
        #expect {
            try V4L2Device(path: "/dev/null")
        } throws: { error in
            (error as? V4L2Error)?.code == .notV4L2
        }
    }
}
