#if canImport(Glibc)
import Glibc
#endif
import EvcaptureTesting
import Foundation
@testable import OutputDevices
import Testing

/// GPIO outputs on a real gpiochip (docs/booth.md#outputs): a CP2112 emulated on /dev/uhid,
/// driven by the kernel's hid-cp2112, requested through libgpiod by the daemon. The emulator
/// records each level the driver sends it, with its time.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct GPIOOutputSystemTests {
    static var canEmulate: Bool { access("/dev/uhid", R_OK | W_OK) == 0 && vividNode() != nil }

    func startCP2112() throws -> (FakeCP2112, String) {
        let cp2112 = try FakeCP2112()
        _ = pollUntil(timeout: .seconds(10)) { FakeCP2112.chipNode() != nil }
        let chip = try #require(FakeCP2112.chipNode(), "hid-cp2112 made no gpiochip for the emulated CP2112 (is the module loaded?)")
        return (cp2112, chip)
    }

    @Test(.enabled(if: canEmulate, "needs /dev/uhid and vivid"))
    func aRelayPulsesAtTheShotAndTheLinesAreReleasedWhenTheDaemonDies() throws {
        let (cp2112, chip) = try startCP2112()
        defer { cp2112.stop() }
        // Another program holds line 4: that output is one error line, the rest goes on.
        let holder = try GPIOWriter(chip: chip, line: .offset(4), activeLow: false, consumer: "test-holder")
        defer { holder.close() }
        let vivid = try #require(vividNode())
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let scratch = try DaemonScratch("gpio")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"
            capture-device = "\(vivid)"
            width = 320
            height = 240
            stream = "always"

            [output]
            directory = "\(scratch.output)"

            [handlers.primary]
            countdown = 1

            [outputs.relay]
            chip = "\(chip)"
            line = 3
            follow = "shot"
            pulse = 0.1

            [outputs.lamp]
            chip = "\(chip)"
            line = 5
            active-low = true
            follow = "session"

            [outputs.busy]
            chip = "\(chip)"
            line = 4
            """)
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { _ = daemon.terminate() }
        let busy = try #require(daemon.waitFor { $0.event == "error" && $0.string("code") == "output" }, "\(daemon.transcript)")
        let message = busy.object.string("message") ?? ""
        #expect(message.hasPrefix("output busy: requesting line 4 of \(chip) as an output (another program holds it)"), "\(message)")
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")
        try #require(pollUntil(timeout: .seconds(20)) { daemon.stderr.contains("capture stream started") }, "\(daemon.transcript)")
        // The session lamp is active low: on drives line 5 low.
        #expect(pollUntil(timeout: .seconds(5)) { cp2112.edges.last { $0.line == 5 }?.value == false }, "\(cp2112.edges)")
        Thread.sleep(forTimeInterval: 1.5)
        cp2112.clearEdges()

        let before = daemon.objects.count
        try keys.click(.volumeDown)
        let tick = try #require(daemon.waitFor(from: before) { $0.event == "countdown" }, "\(daemon.transcript)")
        let press = try #require(tick.object.int("press"))
        let shotTime = try #require(tick.object.double("shot_time"))
        let photo = try #require(daemon.waitFor(timeout: .seconds(10), DaemonLines.action("photo", press: press)), "\(daemon.transcript)")
        let frameTime = try #require(photo.object.double("frame_time"))
        #expect(pollUntil(timeout: .seconds(2)) { cp2112.edges.filter { $0.line == 3 }.count >= 2 }, "\(cp2112.edges)")
        let line3 = cp2112.edges.filter { $0.line == 3 }
        let on = try #require(line3.first { $0.value }, "\(line3)")
        let off = try #require(line3.first { !$0.value && $0.time > on.time }, "\(line3)")
        let onTime = Double(on.time) / 1e6
        print(
            "GPIO pulse vs frame_time: \(String(format: "%+.1f ms", (onTime - frameTime) * 1000)), after the shot's moment \(String(format: "%.1f ms", (onTime - shotTime) * 1000)), length \(Double(off.time - on.time) / 1000) ms"
        )
        // The edges' times are when the fake chip's reports reached this process (after
        // hid-cp2112, uhid and its reader thread), each late by its own amount: a report seen
        // before the shot's moment was sent early, the rest is a sanity bound (the pulse's
        // latency is the benchmark's figure, docs/booth.md#outputs).
        #expect(onTime >= shotTime && onTime - shotTime < 1, "relay on at \(onTime) for the shot at \(shotTime)")
        #expect(abs(onTime - frameTime) <= 1, "relay on at \(onTime), frame \(frameTime)")
        let length = Double(off.time - on.time) / 1e6
        #expect(length > 0 && length < 1, "pulse \(length) s")
        #expect(Double(off.time) / 1e6 >= shotTime + 0.1 - 0.000_002, "relay off at \(Double(off.time) / 1e6) before the pulse's end")
        // While it runs the daemon holds the line.
        var held = false
        do { try GPIOWriter(chip: chip, line: .offset(3), activeLow: false, consumer: "test").close() } catch {
            held = error.errno == EBUSY
        }
        #expect(held, "line 3 was free while the daemon ran")

        // SIGKILL: no clean-up in the daemon, the kernel releases its lines.
        kill(daemon.pid, SIGKILL)
        #expect(daemon.waitForExit() == 128 + SIGKILL)
        let again = try GPIOWriter(chip: chip, line: .offset(3), activeLow: false, consumer: "test")
        again.close()
        let lamp = try GPIOWriter(chip: chip, line: .offset(5), activeLow: false, consumer: "test")
        lamp.close()
        withExtendedLifetime(scratch) {}
    }

    @Test(.enabled(if: canEmulate, "needs /dev/uhid and vivid"))
    func aCleanStopTurnsTheLinesOffAndReleasesThem() throws {
        let (cp2112, chip) = try startCP2112()
        defer { cp2112.stop() }
        let scratch = try DaemonScratch("gpio-stop")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"

            [outputs.lamp]
            chip = "\(chip)"
            line = 0
            follow = "session"
            """)
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        #expect(
            pollUntil(timeout: .seconds(10)) { cp2112.edges.last { $0.line == 0 }?.value == true }, "\(cp2112.edges) \(daemon.transcript)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        #expect(cp2112.edges.last { $0.line == 0 }?.value == false, "\(cp2112.edges)")
        let again = try GPIOWriter(chip: chip, line: .offset(0), activeLow: false, consumer: "test")
        again.close()
        withExtendedLifetime(scratch) {}
    }
}
