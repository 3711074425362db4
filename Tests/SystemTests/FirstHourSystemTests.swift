#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing

/// A Raspberry Pi user's first hour (docs/raspberry-pi.md), on the real kernel: the README's
/// Pi rules against a button and an encoder whose push switch is a second gpio-keys device;
/// the default socket that `evcapture monitor` finds without options; the output directory
/// made at start or refused.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct FirstHourSystemTests {
    /// The README's Raspberry Pi config (its five-minute tour), kept in step with it.
    static let piConfig =
        ReadmeExamples.piConfig + """


            [devices.remote]
            name = "AB Shutter3"
            kind = "shutter"
            """

    @Test func theReadmesPiExampleIsInTheReadme() throws {
        let readme = try String(contentsOfFile: Fixtures.repository + "/README.md", encoding: .utf8)
        let pi = Self.piConfig.split(separator: "\n", omittingEmptySubsequences: false).prefix(15).joined(separator: "\n")
        #expect(readme.contains(pi), "README's Raspberry Pi config differs from FirstHourSystemTests.piConfig")
    }

    @Test func checkConfigAndDevicesSayWhichDevicesEachRuleMatches() throws {
        // Both gpio-keys devices are named "gpio-keys": only `has` tells them apart.
        let button = try fixtureDevice("gpio-keys-volume-keys")
        let push = try fixtureDevice("rotary-encoder-push-switch-gpio-keys")
        let encoder = try fixtureDevice("rotary-encoder-rel-x")
        let scratch = try DaemonScratch("rules")
        let config = try scratch.write("pi.toml", Self.piConfig)
        let exe = try #require(DaemonPaths.executable)

        let check = try run([exe, "check-config", config], environment: scratch.environment)
        #expect(check.status == 0, "\(check)")
        let lines = check.stdout.split(separator: "\n").map(String.init)
        func line(_ rule: String) -> String { lines.first { $0.contains("[devices.\(rule)] (") } ?? "" }
        #expect(line("shutter").hasSuffix("matches \(button.node) \"gpio-keys\""), "\(check.stdout)")
        #expect(line("knob-push").hasSuffix("matches \(push.node) \"gpio-keys\""), "\(check.stdout)")
        #expect(line("encoder").hasSuffix("matches \(encoder.node) \"rotary@0\""), "\(check.stdout)")
        #expect(
            line("remote")
                == "\(config):16: warning: [devices.remote] (name = \"AB Shutter3\") matches no present device; evcapture devices lists the names and ids to match",
            "\(check.stdout)")
        #expect(lines.last == "\(config): ok (4 device rule(s), 0 hook(s), 1 warning(s))", "\(check.stdout)")

        let devices = try run([exe, "devices", "--config", config], environment: scratch.environment)
        #expect(devices.status == 0, "\(devices)")
        #expect(devices.stdout.contains("\nRules of \(config):\n"), "\(devices.stdout)")
        #expect(
            devices.stdout.contains("[devices.knob-push] (bus = \"0019\", has = [\"KEY_ENTER\"]) matches \(push.node) \"gpio-keys\""),
            "\(devices.stdout)")
    }

    @Test func monitorFindsTheDaemonWithoutOptions() throws {
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let scratch = try DaemonScratch("monitor")
        let config = try scratch.write("c.toml", DaemonSystemTests.noActionsConfig)
        // No --socket: $XDG_RUNTIME_DIR/evcapture.sock (the scratch's run/).
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")
        let socket = scratch.path + "/run/evcapture.sock"
        var st = stat()
        #expect(lstat(socket, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK, "\(daemon.transcript)")

        let monitor = try DaemonProcess(scratch.label + "-monitor", arguments: ["monitor"], environment: scratch.environment)
        defer { monitor.terminate() }
        // The monitor is connected once a click reaches it.
        let deadline = ContinuousClock.now + .seconds(20)
        while !monitor.stdout.contains("ended primary KEY_VOLUMEDOWN") && ContinuousClock.now < deadline {
            try keys.click(.volumeDown)
            Thread.sleep(forTimeInterval: 0.5)
        }
        #expect(monitor.stdout.contains("ended primary KEY_VOLUMEDOWN"), "monitor: \(monitor.transcript)\ndaemon: \(daemon.transcript)")
    }

    @Test func theOutputDirectoryIsMadeAtStartOrRefused() throws {
        let scratch = try DaemonScratch("outdir")
        let nested = scratch.path + "/photos/2026/rig"
        let good = try scratch.write("good.toml", "[camera]\ndevice = \"none\"\n[output]\ndirectory = \"\(nested)\"\n")
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", good, "--json"], environment: scratch.environment)
        let started = daemon.waitFor { $0.string("event") == "session" }
        #expect(started != nil, "\(daemon.transcript)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        var st = stat()
        #expect(stat(nested, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR, "\(daemon.transcript)")

        // Under a regular file: refused at start, with the path and the reason; nothing started.
        try scratch.write("file", "")
        let bad = try scratch.write("bad.toml", "[camera]\ndevice = \"none\"\n[output]\ndirectory = \"\(scratch.path)/file/photos\"\n")
        let refused = try DaemonProcess(
            scratch.label + "-bad", arguments: ["run", "--config", bad, "--json"], environment: scratch.environment)
        let status = refused.waitForExit(timeout: .seconds(30))
        #expect(status != nil && status != 0, "\(refused.transcript)")
        #expect(
            refused.stderr.contains(
                "output directory \(scratch.path)/file/photos: cannot create \(scratch.path)/file/photos (Not a directory)"),
            "\(refused.transcript)")
        #expect(refused.stdout.isEmpty, "\(refused.transcript)")
        #expect(access(scratch.path + "/run/evcapture.sock", F_OK) != 0, "a socket was opened")
    }
}
