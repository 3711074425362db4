import CLibevdev
import LinuxIO
import Testing
import Vocabulary

/// The floor's names of event types and codes (Vocabulary's EventNames.swift, made by
/// Scripts/event-names from the kernel's headers) are libevdev's, both ways, for every type
/// and every code up to each type's largest: what evcapture printed and read through
/// libevdev it prints and reads without it (docs/architecture.md#modules). A kernel newer
/// than the linked libevdev may name codes libevdev knows nothing of: the floor may name
/// those, and only those, where libevdev has no name.
@Suite struct EventNamesTests {
    static func libevdevName(_ type: UInt16, _ code: UInt16) -> String? {
        libevdev_event_code_get_name(UInt32(type), UInt32(code)).map { String(cString: $0) }
    }

    /// What libevdev reads a code name as, if anything.
    static func libevdevCode(_ name: String) -> EventCode? {
        let type = libevdev_event_type_from_code_name(name), code = libevdev_event_code_from_code_name(name)
        guard type >= 0, code >= 0 else { return nil }
        return EventCode(EventType(UInt16(type)), UInt16(code))
    }

    @Test func typeNamesAndLargestCodesAreLibevdevs() {
        for t in 0...EventType.max.rawValue {
            let type = EventType(t)
            let name = libevdev_event_type_get_name(UInt32(t)).map { String(cString: $0) }
            #expect(type.name == name ?? String(format0x: t))
            #expect(type.maxCode == Int(libevdev_event_type_get_max(UInt32(t))), "largest code of \(type)")
            if let name {
                #expect(EventType(name: name) == type)
            }
        }
    }

    @Test func everyCodeHasLibevdevsName() {
        var named = 0
        for t in 0...EventType.max.rawValue where EventType(t).maxCode >= 0 {
            for c in 0...UInt16(EventType(t).maxCode) {
                let code = EventCode(EventType(t), c)
                if let name = Self.libevdevName(t, c) {
                    named += 1
                    #expect(code.name == name)
                    #expect(EventCode(name: name) == Self.libevdevCode(name), "\(name) read back")
                } else if EventNames.codes[UInt32(t) << 16 | UInt32(c)] != nil {
                    #expect(Self.libevdevCode(code.name) == nil, "\(code.name): libevdev has no name for \(t):\(c) but reads this one")
                } else {
                    #expect(code.name == "\(EventType(t).name):\(String(format0x: c))")
                }
            }
        }
        #expect(named > 700)
        for key in EventNames.codes.keys {
            let type = EventType(UInt16(key >> 16))
            #expect(Int(key & 0xffff) <= type.maxCode, "\(EventNames.codes[key] ?? ""): above the largest \(type) code")
        }
    }

    /// Every name either side reads, and every name the kernel's headers define (aliases,
    /// range starts, `*_MAX`, `*_CNT`): read the same, or (a code newer than libevdev) only
    /// by the floor and only for a code libevdev leaves unnamed.
    @Test func everyNameIsReadAsLibevdevReadsIt() {
        var names = Set(EventNames.codes.values).union(EventNames.readOnly.keys).union(EventNames.types.values)
        for t in 0...EventType.max.rawValue where EventType(t).maxCode >= 0 {
            for c in 0...UInt16(EventType(t).maxCode) {
                if let n = Self.libevdevName(t, c) { names.insert(n) }
            }
        }
        for header in ["/usr/include/linux/input-event-codes.h", "/usr/include/linux/input.h"] {
            guard let text = try? readWholeFile(header) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix("#define ") {
                if let n = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first { names.insert(String(n)) }
            }
        }
        #expect(names.count > 750)
        for name in names {
            let libevdev = Self.libevdevCode(name)
            if let libevdev {
                #expect(EventCode(name: name) == libevdev, "\(name)")
            } else if let floor = EventCode(name: name) {
                let other = Self.libevdevName(floor.type.rawValue, floor.code)
                #expect(other == nil, "\(name): libevdev does not read it, and names \(floor) otherwise")
            }
            let type = libevdev_event_type_from_name(name)
            #expect(EventType(name: name) == (type >= 0 ? EventType(UInt16(type)) : nil), "\(name) as a type")
        }
    }

    @Test func theNamedConstantsAreTheHeadersValues() {
        let constants: [(EventType, Int32)] = [
            (.syn, EV_SYN), (.key, EV_KEY), (.rel, EV_REL), (.abs, EV_ABS), (.msc, EV_MSC), (.sw, EV_SW), (.led, EV_LED),
            (.snd, EV_SND), (.rep, EV_REP), (.ff, EV_FF), (.max, EV_MAX),
        ]
        for (type, value) in constants { #expect(type.rawValue == UInt16(value), "\(type)") }
        let codes: [(EventCode, EventType, Int32)] = [
            (.synReport, .syn, SYN_REPORT), (.synDropped, .syn, SYN_DROPPED), (.enter, .key, KEY_ENTER), (.space, .key, KEY_SPACE),
            (.kpEnter, .key, KEY_KPENTER), (.mute, .key, KEY_MUTE), (.volumeDown, .key, KEY_VOLUMEDOWN), (.volumeUp, .key, KEY_VOLUMEUP),
            (.power, .key, KEY_POWER), (.pageUp, .key, KEY_PAGEUP), (.pageDown, .key, KEY_PAGEDOWN), (.nextSong, .key, KEY_NEXTSONG),
            (.playPause, .key, KEY_PLAYPAUSE), (.playCD, .key, KEY_PLAYCD), (.pauseCD, .key, KEY_PAUSECD), (.camera, .key, KEY_CAMERA),
            (.select, .key, KEY_SELECT), (.cameraFocus, .key, KEY_CAMERA_FOCUS), (.btn0, .key, BTN_0), (.btnLeft, .key, BTN_LEFT),
            (.keyA, .key, KEY_A), (.relX, .rel, REL_X), (.relY, .rel, REL_Y), (.relHWheel, .rel, REL_HWHEEL), (.relDial, .rel, REL_DIAL),
            (.relWheel, .rel, REL_WHEEL), (.relWheelHiRes, .rel, REL_WHEEL_HI_RES), (.relHWheelHiRes, .rel, REL_HWHEEL_HI_RES),
        ]
        for (code, type, value) in codes { #expect(code == EventCode(type, UInt16(value)), "\(code)") }
    }
}
