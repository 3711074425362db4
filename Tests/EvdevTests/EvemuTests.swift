import EvcaptureTesting
import LinuxIO
import Testing
@testable import Evdev
import Vocabulary

/// Codes listed in the human-readable comment block evemu writes ("#   Event type 1 (EV_KEY)" /
/// "#     Event code 115 (KEY_VOLUMEUP)"): an independent account of the B: bitmasks.
private func commentedCodes(_ text: String) -> Set<EventCode> {
    var result: Set<EventCode> = []
    var type: EventType?
    for line in text.split(separator: "\n") {
        let words = line.split(separator: " ")
        if words.count >= 4, words[0] == "#", words[1] == "Event", words[2] == "type" {
            type = EventType(UInt16(words[3])!)
        } else if words.count >= 4, words[0] == "#", words[1] == "Event", words[2] == "code", let type {
            result.insert(EventCode(type, UInt16(words[3])!))
        } else if line.hasPrefix("# Properties") {
            type = nil
        }
    }
    return result
}

@Suite struct EvemuTests {
    @Test(arguments: Fixtures.recordedDevices)
    func everyFixtureParsesAndMatchesItsCommentBlock(_ name: String) throws {
        let path = Fixtures.evemu(name)
        let recording = try EvemuRecording.load(path: path)
        let text = try readWholeFile(path)
        // EV_SYN is listed in full (0...15) by evemu's comment whatever the mask says.
        let listed = commentedCodes(text).filter { $0.type != .syn }
        #expect(recording.description.codes.filter { $0.type != .syn } == listed)
        #expect(recording.description.has(.synReport))
        let eLines = text.split(separator: "\n").filter { $0.hasPrefix("E:") }.count
        #expect(recording.events.count == eLines)
        #expect(recording.events.last?.isSynReport == true)
        #expect(recording.events.first?.time == Timestamp(microseconds: 1))
    }

    @Test func identitiesOfTheFixtures() throws {
        let pm = try EvemuRecording.load(path: Fixtures.evemu("griffin-powermate")).description
        #expect(pm.name == "Griffin PowerMate")
        #expect(pm.bus == .usb && pm.vendor == 0x077d && pm.product == 0x0410 && pm.version == 0x0400)
        #expect(pm.codes == [.synReport, EventCode(.syn, 1), .synDropped, .btn0, .relDial, EventCode(.msc, 1)])

        let headset = try EvemuRecording.load(path: Fixtures.evemu("bluez-avrcp-headset")).description
        #expect(headset.name == "Example Headset (AVRCP)")
        #expect(headset.bus == .bluetooth && headset.vendor == 0 && headset.product == 0)
        #expect(!headset.hasAutorepeat)
        #expect(headset.codes.filter { $0.type == .key }.count == 53)

        let keyboard = try EvemuRecording.load(path: Fixtures.evemu("usb-keyboard-typing-and-volume")).description
        #expect(keyboard.hasAutorepeat)
        #expect(keyboard.has(.keyA) && keyboard.has(.volumeUp))
        #expect(keyboard.codes.filter { $0.type == .led }.count == 5)
    }

    @Test func absoluteAxesAndEvents() throws {
        let dial = try EvemuRecording.load(path: Fixtures.evemu("huion-q620m-dial"))
        #expect(dial.description.absInfo[0] == AbsInfo(minimum: 0, maximum: 1))
        #expect(dial.description.absInfo[0x28] == AbsInfo(minimum: 0, maximum: 255))
        #expect(dial.description.absInfo.count == 3)
        let first = Array(dial.events.prefix(3))
        #expect(
            first == [
                InputEvent(time: Timestamp(microseconds: 1), .relWheel, 1),
                InputEvent(time: Timestamp(microseconds: 1), .relWheelHiRes, 120),
                InputEvent(time: Timestamp(microseconds: 1), .synReport, 0),
            ])
        let pm = try EvemuRecording.load(path: Fixtures.evemu("griffin-powermate"))
        #expect(pm.events[pm.events.count - 2] == InputEvent(time: Timestamp(seconds: 1, microseconds: 200_001), .relDial, -2))
        let kb = try EvemuRecording.load(path: Fixtures.evemu("usb-keyboard-typing-and-volume"))
        #expect(kb.events[0] == InputEvent(time: Timestamp(microseconds: 1), EventCode(.msc, 4), 458756))
    }

    @Test func toleratesWhitespaceCRLFAndUnknownComments() throws {
        let text =
            "# EVEMU 1.3\r\n#  something new\r\n   N: My  Knob \r\n\tI: 0003 077d 0410 0400\r\n"
            + "P: 00 00 00 00 00 00 00 00\r\nP: 01\r\n"
            + "B: 01 00 00 00 00 00 00 00 00\r\nB: 01 00 00 00 00 00 00 00 00\r\nB: 01 00 00 00 00 00 00 00 00\r\n"
            + "B: 01 00 00 00 00 00 00 00 00\r\nB: 01 01 00\r\n"
            + "A: 07 -10 10 1 2\r\nL: 00 1\r\n\r\n"
            + "  E: 1.5 0001 0100 0001 # BTN_0\r\nE: 1.500000 0000 0000 0000\r\n"
        let r = try EvemuRecording.parse(text, file: "knob.evemu")
        #expect(r.description.name == "My  Knob")
        #expect(r.description.properties == [64])
        #expect(r.description.codes == [.btn0, .abs(7)])
        #expect(r.description.absInfo[7] == AbsInfo(minimum: -10, maximum: 10, fuzz: 1, flat: 2, resolution: 0))
        #expect(
            r.events == [
                InputEvent(time: Timestamp(microseconds: 1_500_000), .btn0, 1),
                InputEvent(time: Timestamp(microseconds: 1_500_000), .synReport, 0),
            ])
    }

    static let malformed: [(text: String, line: Int, problem: String)] = [
        ("N: x\nI: 0003 1 2\n", 2, "I: line needs bus, vendor, product and version"),
        ("N: x\nI: 0003 zz 2 3\n", 2, "vendor \"zz\" is not a 16-bit hex number"),
        ("N: x\nI: 1 2 3 4\nB: 01 0g\n", 3, "\"0g\" is not a hex byte"),
        ("N: x\nI: 1 2 3 4\nB: 00 00 00 ff\n", 3, "code 16 is above the largest EV_SYN code (15)"),
        ("N: x\nI: 1 2 3 4\nB: 40 00\n", 3, "event type 0x40 is above EV_MAX"),
        ("N: x\nI: 1 2 3 4\nA: 00 5 1 0 0 0\n", 3, "axis minimum 5 is above its maximum 1"),
        ("N: x\nI: 1 2 3 4\nA: 00 0 1\n", 3, "A: line needs code, min, max, fuzz, flat and resolution"),
        ("N: x\nI: 1 2 3 4\nE: 0.1 0001 0072\n", 3, "E: line needs time, type, code and value"),
        ("N: x\nI: 1 2 3 4\nE: 1,5 0001 0072 1\n", 3, "time \"1,5\" is not seconds.microseconds"),
        ("N: x\nI: 1 2 3 4\nE: 0.000001 0001 0072 one\n", 3, "value \"one\" is not a 32-bit integer"),
        ("N: x\nI: 1 2 3 4\nE: 0.000001 0001 0300 1\n", 3, "event code 0x0300 is above the largest EV_KEY code"),
        ("N: x\nI: 1 2 3 4\n\nX: 1\n", 4, "unknown line type \"X:\""),
        ("N: x\r\nI: 1 2 3 4\r\nhello\r\n", 3, "expected a line starting with N:"),
        ("N: x\nN: y\nI: 1 2 3 4\n", 2, "second N: line"),
        ("N:   \nI: 1 2 3 4\n", 1, "empty device name"),
        ("I: 1 2 3 4\nE: 0.1 0 0 0\n", 1, "no device name (N: line)"),
        ("N: x\n", 1, "no device id (I: line)"),
        // Time going back, by a microsecond, named at the later line (replay once sorted it
        // into the past without a word, and a long press vanished).
        (
            "N: x\nI: 1 2 3 4\nE: 2.000000 0001 0072 1\nE: 2.000000 0000 0000 0\n# gap\nE: 1.999999 0001 0072 0\n", 6,
            "time 1.999999 is before 2.000000 of the event on line 4 (a recording never goes back in time)"
        ),
        (
            "N: x\r\nI: 1 2 3 4\r\nE: 5.0 0001 0072 1\r\nE: 0.5 0000 0000 0\r\n", 4,
            "time 0.500000 is before 5.000000 of the event on line 3"
        ),
        // Overflowed the microseconds (a trap; found by fuzzing): the largest time is below.
        ("N: x\nI: 1 2 3 4\nE: 0000001921535841011411624.020001 0002 0000 0\n", 3, "is too large"),
        ("N: x\nI: 1 2 3 4\nE: 9223372036854.000000 0000 0000 0\n", 3, "time \"9223372036854.000000\" is too large"),
    ]

    /// Equal times are how a frame looks (every event of a frame has its SYN_REPORT's time), and
    /// two frames may share a microsecond: neither is going back.
    @Test func equalTimesAreFine() throws {
        let text =
            "N: x\nI: 1 2 3 4\nE: 1.000000 0001 0072 1\nE: 1.000000 0000 0000 0\n"
            + "E: 1.000000 0001 0072 0\nE: 1.000000 0000 0000 0\nE: 1.000001 0001 0073 1\n"
        let r = try EvemuRecording.parse(text, file: "same.evemu")
        #expect(r.events.map(\.time.microseconds) == [1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_001])
    }

    @Test func theLargestTimeParses() throws {
        let r = try EvemuRecording.parse("N: x\nI: 1 2 3 4\nE: 9223372036853.999999 0000 0000 0\n", file: "late.evemu")
        #expect(r.events.map(\.time.microseconds) == [9_223_372_036_853_999_999])
    }

    @Test(arguments: malformed)
    func malformedInputNamesFileAndLine(_ c: (text: String, line: Int, problem: String)) {
        #expect {
            _ = try EvemuRecording.parse(c.text, file: "bad.evemu")
        } throws: { error in
            guard let e = error as? EvemuError else { return false }
            return e.file == "bad.evemu" && e.line == c.line && e.problem.contains(c.problem)
                && e.description == "bad.evemu:\(c.line): \(e.problem)"
        }
    }

    @Test func unreadableFileIsAnError() {
        #expect {
            _ = try EvemuRecording.load(path: "/nonexistent/x.evemu")
        } throws: { error in
            (error as? EvemuError)?.description == "/nonexistent/x.evemu: cannot read: no such file or directory"
        }
    }
}
