import EvcaptureTesting
import Foundation
import Testing
import EvcaptureDaemon
import Camera
import Output
import ConfigFile

/// `evcapture replay` as a person runs it: the built binary (``EvcaptureCommand``), its
/// stdout, stderr and exit status.
@Suite struct ReplayCommandTests {
    static func evcapture(_ args: [String]) throws -> ProgramResult { try EvcaptureCommand.run(args) }

    /// A replay reports the actions the daemon would run for its events, hooks included,
    /// without running them.
    @Test func actionsAreReportedAsSkipped() throws {
        let config = try temporaryFile(
            "hooks.toml",
            """
            [handlers.primary]
            click = "none"
            [[hooks]]
            name = "notify"
            argv = ["/bin/false"]
            on = ["began"]
            """)
        let r = try Self.evcapture(["replay", "--json", "--config", config, fixture("gpio-keys-volume-keys.evemu")])
        #expect(r.status == 0, "\(r.stderr)")
        let skipped = r.stdout.split(separator: "\n").filter { $0.contains("\"skipped\"") }
        let began = r.stdout.split(separator: "\n").filter { $0.contains("\"phase\":\"began\"") }
        #expect(!began.isEmpty && skipped.count == began.count + 1, "\(skipped)")  // + the long press's video
        #expect(skipped.allSatisfy { $0.contains("\"action\":\"hook notify\"") || $0.contains("\"action\":\"video\"") })
        #expect(!skipped.contains { $0.contains("\"action\":\"photo\"") }, "click = none: no photo")
    }

    @Test func replaysEveryFixtureAsJSONLines() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Fixtures.directory).filter { $0.hasSuffix(".evemu") }.sorted()
        let r = try Self.evcapture(["replay", "--json"] + files.map(fixture))
        #expect(r.status == 0)
        #expect(r.stderr == "")
        let lines = r.stdout.split(separator: "\n")
        // Every device added and removed, session started and stopped, the capture events of
        // every fixture (ReplayTests.expected), merged, and after each click and long press
        // the daemon's default action (photo, video) reported as skipped.
        let captures = ReplayTests.expected.map(\.1.count).reduce(0, +)
        let gestures = ReplayTests.expected.flatMap(\.1).filter { $0.hasSuffix(" click") || $0.hasSuffix(" long-press") }.count
        #expect(files.count == ReplayTests.expected.count)
        #expect(lines.count == files.count * 2 + 2 + captures + gestures)
        #expect(lines.filter { $0.contains("\"skipped\":\"replay runs no actions\"") }.count == gestures)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["event"] is String && object?["time"] is Double, "\(line)")
        }
        #expect(lines.filter { $0.contains("\"event\":\"capture\"") }.count == captures)
    }

    @Test func readableLinesWithoutJSON() throws {
        let r = try Self.evcapture(["replay", fixture("bluez-avrcp-headset.evemu")])
        #expect(r.status == 0)
        #expect(r.stdout.contains("0.120001     ended     primary   KEY_PLAYCD       press 1   Example Headset (AVRCP) [sound] click"))
    }

    @Test func aMalformedRecordingIsFileLineProblemAndNoOutput() throws {
        let bad = try temporaryFile(
            "bad.evemu",
            try recording(basedOn: "gpio-keys-volume-keys.evemu", events: ["E: 0.000001 0001 0072 0001", "E: 0.1 0001"]))
        let badLine =
            try String(contentsOfFile: bad, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex(of: "E: 0.1 0001")! + 1
        // The good file comes first: still nothing may be printed.
        let r = try Self.evcapture(["replay", "--json", fixture("gpio-keys-volume-keys.evemu"), bad])
        #expect(r.status != 0)
        #expect(r.stdout == "")
        #expect(r.stderr.hasPrefix("\(bad):\(badLine): "), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func aMissingRecordingNamesTheFile() throws {
        let r = try Self.evcapture(["replay", "/nonexistent/x.evemu"])
        #expect(r.status != 0)
        #expect(r.stdout == "")
        #expect(r.stderr.hasPrefix("/nonexistent/x.evemu: cannot read"), "\(r.stderr)")
    }

    @Test func aMalformedConfigIsFileLineProblemAndNoOutput() throws {
        let config = try temporaryFile("bad.toml", "[capture]\nhold-threshold = 0.5\n\n[devices.knob]\nkind = \"wheel\"\n")
        let r = try Self.evcapture(["replay", "--json", "--config", config, fixture("gpio-keys-volume-keys.evemu")])
        #expect(r.status != 0)
        #expect(r.stdout == "")
        #expect(r.stderr.hasPrefix("\(config):5: unknown device kind \"wheel\""), "\(r.stderr)")

        let syntax = try temporaryFile("syntax.toml", "[capture]\nhold-threshold = = 1\n")
        let s = try Self.evcapture(["replay", "--config", syntax, fixture("gpio-keys-volume-keys.evemu")])
        #expect(s.status != 0)
        #expect(s.stdout == "")
        #expect(s.stderr.hasPrefix("\(syntax):2: "), "\(s.stderr)")
    }

    /// A user's report, as they ran it: a Windows-edited config with a bad header aborted
    /// `check-config` inside the TOML parser (exit 134, a crash report) and put every error on
    /// line 1.
    @Test func checkConfigNamesCRLFLinesAndNeverAborts() throws {
        let header = try temporaryFile("crlf-header.toml", "a = 1\r\n[ ~]\r\n")
        let h = try Self.evcapture(["check-config", header])
        #expect(h.status == 1)
        #expect(h.stdout == "")
        #expect(h.stderr == "\(header):2: a table header must start with a key (letters, digits, - and _, or a quoted key), not '~'\n")

        let value = try temporaryFile("crlf-value.toml", "# rig\r\n[capture]\r\nhold-threshold = \"x\"\r\n")
        let v = try Self.evcapture(["check-config", value])
        #expect(v.status == 1)
        #expect(v.stderr == "\(value):3: capture.hold-threshold must be a number of seconds, not \"x\"\n")

        // failed an assertion inside toml++ itself (found by fuzzing): a parse error now
        let array = try temporaryFile("array.toml", "[controls]\norder = [\"zoom\", }\n")
        let a = try Self.evcapture(["check-config", array])
        #expect(a.status == 1)
        #expect(a.stderr.hasPrefix("\(array):2: Error while parsing array: "), "\(a.stderr)")
    }

    @Test func aGoodConfigIsUsed() throws {
        let config = try temporaryFile("good.toml", "[capture]\nsecondary-handler = true\n")
        let r = try Self.evcapture(["replay", "--json", "--config", config, fixture("gpio-keys-volume-keys.evemu")])
        #expect(r.status == 0)
        #expect(r.stdout.contains("\"action\":\"secondary\",\"button\":\"KEY_VOLUMEUP\""))
    }

    @Test func noFilesIsAUsageError() throws {
        let r = try Self.evcapture(["replay"])
        #expect(r.status != 0)
        #expect(r.stdout == "")
        #expect(!r.stderr.isEmpty)
    }
}

/// `run --help` says where the socket goes and points at the installed documentation;
/// `check-config` refuses a hold threshold given in milliseconds with the valid range.
extension ReplayCommandTests {
    @Test func runHelpPointsAtTheManPageAndTheSocket() throws {
        let help = try Self.evcapture(["run", "--help"])
        #expect(help.status == 0)
        let text = help.stdout.replacing("\n", with: " ")
        #expect(text.contains("man evcapture"), "\(help.stdout)")
        #expect(text.contains("$XDG_RUNTIME_DIR/evcapture.sock"), "\(help.stdout)")
    }

    @Test func checkConfigRefusesMillisecondsAndWarnsAboutRules() throws {
        let ms = try temporaryFile("ms.toml", "[capture]\nhold-threshold = 500\n")
        let m = try Self.evcapture(["check-config", ms])
        #expect(m.status == 1)
        #expect(
            m.stderr
                == "\(ms):2: capture.hold-threshold must be between 0.05 and 10 seconds, not 500 (seconds, not milliseconds: for 500 ms write 0.5)\n"
        )
        let rule = try temporaryFile("rule.toml", "[devices.x]\nkind = \"knob\"\n")
        let r = try Self.evcapture(["check-config", rule])
        #expect(r.status == 0)
        #expect(r.stdout.hasPrefix("\(rule):1: warning: [devices.x] has no match keys"), "\(r.stdout)")
        #expect(r.stdout.hasSuffix("warning(s))\n"), "\(r.stdout)")
    }
}
