#if canImport(Glibc)
import Glibc
#endif
import Booth
import Vocabulary
import EvcaptureTesting
import Foundation
import Logging
import OutputDevices
import Synchronization
import Testing

/// The outputs' thread against an LED class directory made in a scratch directory (the
/// kernel's own LED class devices are in the system tests), and a GPIO chip that is not there.
@Suite struct OutputsTests {
    /// A scratch LED class directory holding LED `name` with its `max_brightness` (255); its root.
    static func ledClass(_ name: String) throws -> String {
        let root = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true)
        try "255\n".write(toFile: root + "/\(name)/max_brightness", atomically: false, encoding: .utf8)
        return root
    }

    func ledDirectory(_ name: String) throws -> (root: String, brightness: String) {
        let root = try Self.ledClass(name)
        try "0\n".write(toFile: root + "/\(name)/brightness", atomically: false, encoding: .utf8)
        return (root, root + "/\(name)/brightness")
    }

    /// The first line: what sysfs would hold (a plain file keeps the tail of a longer value).
    func read(_ path: String) -> String {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "?").split(separator: "\n").first.map(String.init) ?? ""
    }

    /// An LED whose `brightness` is a FIFO the test reads: every level the outputs write
    /// arrives, in order, however late the test's thread runs (a plain file shows only the
    /// latest, and a pulse shorter than a pause of the test's thread would be missed).
    final class FIFOLED {
        let root: String
        private let fd: Int32
        private var partial = ""
        /// Each level read, with the time it was read: it was written at that time or before.
        private(set) var levels: [(level: String, readAt: Int64)] = []

        init(_ name: String) throws {
            root = try OutputsTests.ledClass(name)
            let path = root + "/\(name)/brightness"
            guard mkfifo(path, 0o600) == 0 else { throw SystemError(errno: errno, context: "mkfifo \(path)") }
            // Open for reading first: the outputs' open for writing then does not block.
            fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw SystemError(errno: errno, context: "opening \(path)") }
        }
        deinit { close(fd) }

        /// Takes what was written since the last call.
        func take() {
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = Glibc.read(fd, &buffer, buffer.count)
                guard n > 0 else { break }
                partial += String(decoding: buffer[0..<n], as: UTF8.self)
            }
            let now = monotonicMicroseconds()
            while let newline = partial.firstIndex(of: "\n") {
                levels.append((String(partial[..<newline]), now))
                partial = String(partial[partial.index(after: newline)...])
            }
        }

        /// The levels after the first `255` (the outputs may write `0` when they start).
        var pulse: [(level: String, readAt: Int64)] { Array(levels.drop { $0.level != "255" }) }

        /// Reads until a pulse has begun and ended (or `timeout`).
        func waitForPulse(timeout: Duration = .seconds(10)) {
            _ = pollUntil(timeout: timeout) {
                take()
                return pulse.count >= 2
            }
        }
    }

    /// An LED named "flash" pulsing `length` µs at each shot.
    func flash(pulse length: Int64) throws -> (Outputs, FIFOLED) {
        let led = try FIFOLED("flash")
        let outputs = try Outputs(
            [OutputConfiguration(name: "flash", target: .led("flash"), rule: .pulseAtShot(length: length))], ledRoot: led.root,
            logger: Logger(label: "t"), onError: { Issue.record("\($0)") })
        return (outputs, led)
    }

    /// A level read at a time was written by then: `255` read before the shot's moment was
    /// written early, `0` read before the moment plus the pulse's length ended it early. A
    /// late reader only reads later, so load cannot fail these checks.
    @Test func aShotPulsesTheLEDAtMaxBrightnessThenOff() throws {
        let (outputs, led) = try flash(pulse: 300_000)
        defer { outputs.stop() }
        let now = monotonicMicroseconds()
        let shot = now + 100_000
        outputs.follow(.shot(time: shot), now: now)
        led.waitForPulse()
        #expect(led.pulse.map(\.level) == ["255", "0"], "\(led.levels)")
        #expect(led.levels.dropLast(led.pulse.count).allSatisfy { $0.level == "0" }, "\(led.levels)")
        if led.pulse.count == 2 {
            #expect(led.pulse[0].readAt >= shot, "on before the shot")
            #expect(led.pulse[1].readAt >= shot + 300_000, "off before the pulse's end")
        }
    }

    /// A timelapse's line carries its next shot's moment (docs/booth.md#outputs): the LED
    /// lights at that moment with no shot reported, and the timelapse's stop drops the next.
    @Test func aTimelapsesNextShotPulsesAtItsMomentWithoutItsShotEvent() throws {
        let (outputs, led) = try flash(pulse: 100_000)
        defer { outputs.stop() }
        func report(_ state: TimelapseReport.State, next: Int64?) -> ActionOutcome {
            .timelapse(TimelapseReport(state: state, press: 1, count: 1, missed: 0, next: next.map(Timestamp.init(microseconds:))))
        }
        let next = monotonicMicroseconds() + 300_000
        outputs.follow(report(.shot, next: next))
        led.waitForPulse()
        #expect(led.pulse.map(\.level) == ["255", "0"], "\(led.levels)")
        if led.pulse.count == 2 {
            #expect(led.pulse[0].readAt >= next, "on before the moment")
            #expect(led.pulse[1].readAt >= next + 100_000, "off before the pulse's end")
        }
        // Stopped before its next moment: that one never lights. Whatever the outputs write
        // stays in the FIFO, so a late look still sees it.
        let seen = led.levels.count
        let later = monotonicMicroseconds() + 300_000
        outputs.follow(report(.shot, next: later))
        outputs.follow(report(.stopped, next: nil))
        while monotonicMicroseconds() < later + 300_000 { usleep(20_000) }
        led.take()
        #expect(!led.levels.dropFirst(seen).contains { $0.level == "255" }, "the stopped timelapse's next shot lit the LED: \(led.levels)")
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
