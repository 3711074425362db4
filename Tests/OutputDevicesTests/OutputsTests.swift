#if canImport(Glibc)
import Glibc
#endif
import Booth
import Vocabulary
import EvcaptureTesting
import Foundation
import Logging
import OutputDevices
import LinuxIO
import Synchronization
import Testing

@testable import Actions

/// The outputs' thread against an LED class directory made in a scratch directory (the
/// kernel's own LED class devices are in the system tests), and a GPIO chip that is not there.
@Suite struct OutputsTests {
    func ledDirectory(_ name: String) throws -> (root: String, brightness: String) {
        let root = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true)
        try "0\n".write(toFile: root + "/\(name)/brightness", atomically: false, encoding: .utf8)
        try "255\n".write(toFile: root + "/\(name)/max_brightness", atomically: false, encoding: .utf8)
        return (root, root + "/\(name)/brightness")
    }

    /// The first line: what sysfs would hold (a plain file keeps the tail of a longer value).
    func read(_ path: String) -> String {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "?").split(separator: "\n").first.map(String.init) ?? ""
    }

    /// An LED named "flash" pulsing `length` µs at each shot; its brightness file.
    func flash(pulse length: Int64) throws -> (Outputs, brightness: String) {
        let (root, brightness) = try ledDirectory("flash")
        let outputs = try Outputs(
            [OutputConfiguration(name: "flash", target: .led("flash"), rule: .pulseAtShot(length: length))], ledRoot: root,
            logger: Logger(label: "t"), onError: { Issue.record("\($0)") })
        return (outputs, brightness)
    }

    @Test func aShotPulsesTheLEDAtMaxBrightnessThenOff() throws {
        let (outputs, brightness) = try flash(pulse: 300_000)
        defer { outputs.stop() }
        // Off at start.
        #expect(pollUntil { read(brightness) == "0" })
        let now = monotonicMicroseconds()
        outputs.follow(.shot(time: now + 100_000), now: now)
        #expect(read(brightness) == "0", "on before the shot")
        #expect(pollUntil(timeout: .seconds(2)) { read(brightness) == "255" })
        let on = monotonicMicroseconds()
        #expect(on >= now + 100_000)
        #expect(pollUntil(timeout: .seconds(2)) { read(brightness) == "0" })
        #expect(monotonicMicroseconds() >= now + 400_000)
    }

    /// A timelapse's line carries its next shot's moment (docs/booth.md#outputs): the LED
    /// lights at that moment with no shot reported, and the timelapse's stop drops the next.
    @Test func aTimelapsesNextShotPulsesAtItsMomentWithoutItsShotEvent() throws {
        let (outputs, brightness) = try flash(pulse: 100_000)
        defer { outputs.stop() }
        #expect(pollUntil { read(brightness) == "0" })
        func report(_ state: TimelapseReport.State, next: Int64?) -> ActionOutcome {
            .timelapse(TimelapseReport(state: state, press: 1, count: 1, missed: 0, next: next.map(Timestamp.init(microseconds:))))
        }
        let next = monotonicMicroseconds() + 300_000
        outputs.follow(report(.shot, next: next))
        #expect(read(brightness) == "0", "on before the moment")
        #expect(pollUntil(timeout: .seconds(2)) { read(brightness) == "255" })
        #expect(monotonicMicroseconds() >= next)
        #expect(pollUntil(timeout: .seconds(2)) { read(brightness) == "0" })
        // Stopped before its next moment: that one never lights.
        let later = monotonicMicroseconds() + 300_000
        outputs.follow(report(.shot, next: later))
        outputs.follow(report(.stopped, next: nil))
        var lit = false
        while monotonicMicroseconds() < later + 200_000 {
            lit = lit || read(brightness) == "255"
            usleep(2_000)
        }
        #expect(!lit, "the stopped timelapse's next shot lit the LED")
    }

    @Test func aMissingGPIOChipIsOneErrorAndTheOtherOutputsGoOn() throws {
        let (root, brightness) = try ledDirectory("busy")
        let errors = Mutex<[String]>([])
        let outputs = try Outputs(
            [
                OutputConfiguration(
                    name: "relay", target: .gpio(chip: "gpiochip-none", line: .offset(3), activeLow: false), rule: .session),
                OutputConfiguration(name: "busy", target: .led("busy"), rule: .session),
            ], ledRoot: root, logger: Logger(label: "t"), onError: { e in errors.withLock { $0.append(e) } })
        #expect(errors.withLock { $0.count } == 1)
        #expect(
            errors.withLock { $0.first?.hasPrefix("output relay: opening GPIO chip gpiochip-none") } == true, "\(errors.withLock { $0 })")
        #expect(outputs.names == ["busy"])
        outputs.follow(.session(running: true))
        #expect(pollUntil { read(brightness) == "255" })
        outputs.stop()
        #expect(read(brightness) == "0", "left on after stop")
    }

    @Test func aMissingLEDIsOneError() throws {
        let errors = Mutex<[String]>([])
        let outputs = try Outputs(
            [OutputConfiguration(name: "x", target: .led("nope"), rule: .session)], ledRoot: try temporaryDirectory(),
            logger: Logger(label: "t"), onError: { e in errors.withLock { $0.append(e) } })
        outputs.stop()
        #expect(errors.withLock { $0 }.count == 1)
        #expect(outputs.names.isEmpty)
    }
}
