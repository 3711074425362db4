@testable import Capture
import Evdev
import Vocabulary
import Foundation
import Logging
import Testing

@testable import Output
@testable import EvcaptureDaemon
import ConfigFile

/// A device names itself (Bluetooth, uinput), so a name may hold escape
/// sequences or line breaks. Readable lines, `monitor` and logs escape them; JSON stays exact.
@Suite struct TextSafetyTests {
    /// Clears the screen, sets the terminal title, moves to column 0 (CR), starts a line of
    /// its own (LF) and uses the 8-bit CSI (C1) and DEL.
    static let hostileName = "Remote\u{1B}[2J\u{1B}]0;owned\u{07}\rroot\nx\u{9B}1m\u{7F}"

    static func hasControlCharacters(_ s: Substring) -> Bool {
        s.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }
    }

    @Test func everyControlCharacterBecomesAnEscape() {
        #expect(ReadableLines.escaped(Self.hostileName) == #"Remote\u{1B}[2J\u{1B}]0;owned\u{7}\rroot\nx\u{9B}1m\u{7F}"#)
        #expect(ReadableLines.escaped("tab\there") == #"tab\there"#)
        // a backslash doubles, so an escape in the output always came from a control character
        #expect(ReadableLines.escaped(#"C:\u{1B}"#) == #"C:\\u{1B}"#)
        // printable text is left alone, non-ASCII included (U+00A0..U+00BF share C1's lead byte)
        for s in ["AB Shutter3", "Télécommande ☃ 🎥", "\u{A0}\u{A9}\u{BF}", ""] { #expect(ReadableLines.escaped(s) == s) }
        // every C0, DEL and C1 character, each on its own
        for v in Array(0..<0x20) + Array(0x7F..<0xA0) {
            let e = ReadableLines.escaped(String(Unicode.Scalar(UInt8(v))))
            #expect(!Self.hasControlCharacters(e[...]) && e.hasPrefix("\\"), "U+\(String(v, radix: 16))")
        }
    }

    /// A recording of a remote whose name holds escape sequences and a carriage return (an
    /// evemu `N:` line cannot hold a line feed; the live path's names can, see below).
    @Test func replayEscapesTheNameInReadableLinesAndKeepsItExactInJSON() throws {
        let name = "Remote\u{1B}[2J\u{1B}]0;owned\u{07}\rroot\u{9B}1m"
        let fixtureText = try String(contentsOfFile: fixture("gpio-keys-volume-keys.evemu"), encoding: .utf8)
        #expect(fixtureText.contains("N: gpio-keys\n"))
        let path = try temporaryFile("hostile-name.evemu", fixtureText.replacingOccurrences(of: "N: gpio-keys\n", with: "N: \(name)\n"))
        var pipeline = ReplayPipeline(inputs: try ReplayInput.load(paths: [path]), config: Config(), controls: nil)
        let outputs = pipeline.run()
        #expect(outputs.contains { $0.captureEvent != nil })
        for o in outputs {
            #expect(!Self.hasControlCharacters(o.text[...]), "\(o.text.debugDescription)")
            let object = try JSONSerialization.jsonObject(with: Data(o.json.utf8)) as? [String: Any]
            if let device = object?["device"] as? String { #expect(device == name) }
        }
        let added = try #require(outputs.first { $0.json.hasPrefix(#"{"event":"device","change":"added""#) })
        #expect(added.text.contains(#"Remote\u{1B}[2J\u{1B}]0;owned\u{7}\rroot\u{9B}1m (hostile-name.evemu)"#), "\(added.text)")
        let capture = try #require(outputs.first { $0.captureEvent != nil })
        #expect(capture.text.hasSuffix(#"Remote\u{1B}[2J\u{1B}]0;owned\u{7}\rroot\u{9B}1m"#), "\(capture.text)")
    }

    /// `monitor` reads the daemon's JSON: the name arrives exact and must be escaped there.
    @Test func monitorEscapesNamesFromTheSocket() throws {
        var name = ""
        JSONValue.quote(Self.hostileName, into: &name)
        let line =
            #"{"event":"capture","phase":"began","action":"primary","button":"KEY_ENTER","device":"#
            + name + #","node":"/dev/input/event7","press":1,"sound":false,"time":12.5}"#
        var plain = MonitorRenderer(isTerminal: false)
        let out = plain.consume(line: line)
        #expect(out.hasSuffix("\n") && out.dropLast().firstIndex(of: "\n") == nil, "\(out.debugDescription)")
        #expect(!Self.hasControlCharacters(out.dropLast()))
        #expect(out.contains(ReadableLines.escaped(Self.hostileName)))

        // on a terminal, the only escapes are the renderer's own clear-line
        var terminal = MonitorRenderer(isTerminal: true)
        let shown = terminal.consume(line: line)
        #expect(shown.hasPrefix(MonitorRenderer.clearLine))
        #expect(!Self.hasControlCharacters(shown.dropFirst(MonitorRenderer.clearLine.count).dropLast()))
        // a control's title too, and a line that is not JSON
        let control = terminal.consume(line: #"{"event":"control","control":"zoom","title":"Zoom\u001b[31m","value":1,"time":1}"#)
        #expect(control.hasPrefix(MonitorRenderer.clearLine + #"Zoom\u{1B}[31m"#), "\(control.debugDescription)")
        #expect(!Self.hasControlCharacters(plain.consume(line: "garbage\u{1B}[2J").dropLast()))
    }

    /// A handler that keeps what it is given.
    final class Recorder: LogHandler, @unchecked Sendable {  // tests only, one thread
        var events: [LogEvent] = []
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { events.append(event) }
    }

    @Test func logMessagesAndMetadataAreEscaped() throws {
        let recorder = Recorder()
        var logger = Logger(label: "test") { _ in EscapingLogHandler(recorder) }
        logger[metadataKey: "device.path"] = "/dev/input/event7\n"
        let name = Self.hostileName
        logger.info(
            "input device added: \(name)",
            metadata: ["device.name": "\(name)", "device.roles": .array(["\(name)"]), "press": .stringConvertible(3)])
        let event = try #require(recorder.events.first)
        #expect(event.message.description == "input device added: " + ReadableLines.escaped(name))
        #expect(event.metadata?["device.name"] == .string(ReadableLines.escaped(name)))
        #expect(event.metadata?["device.roles"] == .array([.string(ReadableLines.escaped(name))]))
        #expect(event.metadata?["press"] == .string("3"))
        #expect(recorder.metadata["device.path"] == .string(#"/dev/input/event7\n"#))
    }

    /// `evcapture devices`: one line per device however it names itself.
    @Test func theDevicesReportEscapesNamesAndNodes() throws {
        let recording = try EvemuRecording.load(path: fixture("gpio-keys-volume-keys.evemu"))
        var description = recording.description
        description.name = Self.hostileName
        let profile = RoleClassifier.profile(for: description, node: "/dev/input/event9\u{1B}[A")
        let inventory = DeviceInventory(devices: [DeviceReport(profile: profile, udevRole: nil)], unreadable: [], listedBy: "test")
        let first = try #require(inventory.text().split(separator: "\n").first)
        #expect(first.hasPrefix(#"/dev/input/event9\u{1B}[A  "Remote\u{1B}[2J"#), "\(first)")
        #expect(!Self.hasControlCharacters(first))
    }
}
