import EvcaptureTesting
import Evdev
import Vocabulary
import Foundation
import Testing
import ConfigFile
@testable import EvcaptureDaemon

/// A first hour (docs/troubleshooting.md): which devices rules match, whether the service could
/// write the photos, the output directory made ready at start.
@Suite struct FirstHourTests {
    static let piConfig = """
        [devices.shutter]
        bus = "0019"
        has = ["KEY_VOLUMEDOWN"]
        roles = { KEY_VOLUMEDOWN = "primary" }

        [devices.push]
        bus = "0019"
        has = ["KEY_ENTER"]
        roles = { KEY_ENTER = "light-press" }

        [devices.encoder]
        name = "rotary@5"
        kind = "encoder"

        [devices.remote]
        kind = "shutter"
        """

    /// A Pi with the README's overlays: two gpio-keys nodes of the same name and an encoder.
    static let piDevices: [(node: String, description: DeviceDescription)] = [
        ("/dev/input/event0", DeviceDescription(name: "button@11", bus: BusType(rawValue: 0x19), codes: [.volumeDown])),
        ("/dev/input/event1", DeviceDescription(name: "rotary@5", bus: BusType(rawValue: 0x19), codes: [EventCode(.rel, 0)])),
        ("/dev/input/event2", DeviceDescription(name: "button@11", bus: BusType(rawValue: 0x19), codes: [.enter])),
    ]

    @Test func eachRuleSaysWhichPresentDevicesItMatches() throws {
        let config = try Config.parse(Self.piConfig, file: "pi.toml")
        let inventory = DeviceInventory(devices: [], unreadable: [], listedBy: "udev", described: Self.piDevices)
        let (text, warnings) = ConfigCheck.report(config: config, file: "pi.toml", inventory: inventory, sandbox: nil)
        #expect(
            text.split(separator: "\n") == [
                "pi.toml:15: warning: [devices.remote] has no match keys (name, node, bus, vendor, product, uniq, has): it applies only to a device named \"remote\"; add name = \"...\" (as evcapture devices shows it) or other match keys to say which device",
                "pi.toml:11: [devices.encoder] (name = \"rotary@5\") matches /dev/input/event1 \"rotary@5\"",
                "pi.toml:6: [devices.push] (bus = \"0019\", has = [\"KEY_ENTER\"]) matches /dev/input/event2 \"button@11\"",
                "pi.toml:15: warning: [devices.remote] (name = \"remote\") matches no present device; evcapture devices lists the names and ids to match",
                "pi.toml:1: [devices.shutter] (bus = \"0019\", has = [\"KEY_VOLUMEDOWN\"]) matches /dev/input/event0 \"button@11\"",
            ])
        #expect(warnings == 2)
    }

    @Test func aRuleThatMatchesOnlyWhatAnEarlierRuleTookSaysSo() throws {
        let config = try Config.parse("[devices.a]\nbus = \"0019\"\n[devices.b]\nname = \"rotary@5\"\n", file: "c.toml")
        let rules = RuleMatch.report(config: config, devices: Self.piDevices)
        #expect(rules.map(\.devices.count) == [3, 0])
        #expect(
            rules[1].text(file: "c.toml").contains("matches no present device (/dev/input/event1 \"rotary@5\" taken by an earlier rule)"))
    }

    @Test func noReadableDeviceIsOneWarningNotOnePerRule() throws {
        let config = try Config.parse(Self.piConfig, file: "pi.toml")
        let inventory = DeviceInventory(
            devices: [], unreadable: [("/dev/input/event0", EvdevError(code: .permissionDenied, errno: EACCES, context: "x"))],
            listedBy: "udev")
        var warnings = 0
        let text = ConfigCheck.rulesText(config: config, file: "pi.toml", inventory: inventory, warnings: &warnings)
        #expect(warnings == 1 && text.hasPrefix("pi.toml: warning: cannot tell which devices the [devices.*] rules match"))
    }

    static let unit = """
        [Service]
        User=evcapture
        RuntimeDirectory=evcapture
        StateDirectory=evcapture
        ProtectSystem=strict
        ProtectHome=yes
        """

    @Test func checkConfigWarnsWhenTheServiceCouldNotWriteTheDirectory() throws {
        let sandbox = ServiceSandbox.parse(unit: "/etc/systemd/system/evcapture.service", text: Self.unit, dropIns: [])
        #expect(sandbox.writable == ["/var/lib/evcapture", "/run/evcapture"])
        #expect(
            sandbox.problem(writing: "/var/lib/evcapture/photos") == nil
                || sandbox.problem(writing: "/var/lib/evcapture/photos")!.contains("may not write"))
        let srv = try #require(sandbox.problem(writing: "/srv/evcapture"))
        #expect(
            srv.hasPrefix(
                "the evcapture service (/etc/systemd/system/evcapture.service: ProtectSystem=strict) cannot write to /srv/evcapture without a drop-in"
            ))
        #expect(srv.contains("[Service]\n  ReadWritePaths=/srv/evcapture"))
        let home = try #require(sandbox.problem(writing: "/home/pi/Pictures"))
        #expect(home.contains("ProtectHome=yes) cannot see /home/pi/Pictures: choose a directory outside /home"))
        // With docs/service.md's drop-in, /srv/evcapture is allowed (owner and mode are judged
        // only for a user that exists on this machine).
        let allowed = ServiceSandbox.parse(
            unit: "u", text: Self.unit.replacing("User=evcapture", with: "User=evcapture-no-such-user"),
            dropIns: ["[Service]\nReadWritePaths=/srv/evcapture\n"])
        #expect(allowed.problem(writing: "/srv/evcapture/2026") == nil)
        // An empty ReadWritePaths= clears the list.
        let cleared = ServiceSandbox.parse(
            unit: "u", text: Self.unit + "\nReadWritePaths=/srv/evcapture\n", dropIns: ["[Service]\nReadWritePaths=\n"])
        #expect(cleared.problem(writing: "/srv/evcapture") != nil)

        let config = try Config.parse("[output]\ndirectory = \"/srv/evcapture\"\n", file: "c.toml")
        let (text, warnings) = ConfigCheck.report(config: config, file: "c.toml", inventory: nil, sandbox: sandbox)
        #expect(warnings == 1 && text.hasPrefix("c.toml: warning: output.directory /srv/evcapture: the evcapture service"))
    }

    @Test func theServiceUsersPermissionsAreJudged() throws {
        let dir = try temporaryDirectory()
        chmod(dir, 0o700)
        // nobody exists on Debian; a 0700 root-owned directory is not writable for it.
        guard getpwnam("nobody") != nil, getuid() == 0 else { return }
        let problem = ServiceSandbox.permissionProblem(user: "nobody", directory: dir + "/photos")
        #expect(
            problem?.hasPrefix("the service's user nobody may not write to \(dir) (where \(dir)/photos would be created) (mode 700") == true
        )
        chmod(dir, 0o777)
        #expect(ServiceSandbox.permissionProblem(user: "nobody", directory: dir + "/photos") == nil)
    }

    @Test func theOutputDirectoryIsCreatedAtStartOrRefused() throws {
        let dir = try temporaryDirectory()
        try OutputDirectory.prepare(dir + "/a/b/c")
        var st = stat()
        #expect(stat(dir + "/a/b/c", &st) == 0 && st.st_mode & S_IFMT == S_IFDIR)
        FileManager.default.createFile(atPath: dir + "/file", contents: Data())
        #expect(throws: OutputDirectoryError(path: dir + "/file", errno: ENOTDIR, problem: "exists and is not a directory")) {
            try OutputDirectory.prepare(dir + "/file")
        }
        #expect {
            try OutputDirectory.prepare(dir + "/file/photos")
        } throws: { "\($0)".hasPrefix("output directory \(dir)/file/photos: cannot create \(dir)/file/photos (Not a directory)") }
        // Read-only, as ProtectSystem=strict makes it: the error shows the drop-in.
        let e = OutputDirectoryError(path: "/srv/evcapture", errno: EROFS, problem: "photos and videos cannot be written there")
        #expect(
            e.description.hasPrefix(
                "output directory /srv/evcapture: photos and videos cannot be written there (Read-only file system). Under systemd/evcapture.service"
            ))
        #expect(e.description.contains("ReadWritePaths=/srv/evcapture"))
        // Every errno that means "not allowed" shows it (the floor's one classifier), and no other does.
        for allowed in [EACCES, EPERM] {
            #expect(OutputDirectoryError(path: "/srv/evcapture", errno: allowed, problem: "p").description.contains("ReadWritePaths="))
        }
        for other in [ENOTDIR, ENOSPC, ENOENT, 0] {
            #expect(!OutputDirectoryError(path: "/srv/evcapture", errno: other, problem: "p").description.contains("ReadWritePaths="))
        }
    }
}
