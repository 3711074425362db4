#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Vocabulary
import Logging
import Synchronization
import Testing
import V4L2
import Frames

/// `[camera] fps` on vivid (docs/behaviour.md#the-moment-of-the-press): the ring's frames
/// come at the rate asked for, measured from their kernel timestamps; a rate vivid cannot
/// give at the size gets the driver's choice, and the stream says so once (`camera-fps`) and
/// runs on.
///
/// vivid's webcam input offers 1, 2, 4, 5, 10, 12.5, 15, 25, 30, 40, 50 and 60 fps at its
/// smallest size (320×180), fewer at larger ones; asked for another interval it takes the
/// longest one not longer than asked (the next faster rate), or its fastest.
@Suite(.systemTest, .serialized)
struct FrameRateSystemTests {
    static let logger = Logger(label: "evcapture.tests.fps")

    /// The ring streaming vivid at `fps`: the rate the driver reports, the camera's interval
    /// over 16 frames (their time span over their sequence span: a frame vivid skips at its
    /// source under load still counts in its sequence numbers, so the interval stays the
    /// camera's), and what `onError` said.
    func ring(_ node: String, fps: Double?) throws -> (reported: Double?, intervalMs: Double, errors: [StreamingError]) {
        let scratch = try ScratchDirectory(prefix: "fps")
        let errors = Mutex<[StreamingError]>([])
        let source = FrameSource(
            settings: StreamSettings(devicePath: node, width: 320, height: 240, framesPerSecond: fps),
            mode: .always, logger: Self.logger, onError: { e in errors.withLock { $0.append(e) } })
        defer { source.stopAndWait() }
        source.start()
        var frames: [(time: Int64, sequence: UInt32)] = []
        _ = try source.frames(from: monotonicNow(), timeout: .seconds(10)) { frame in
            frames.append((frame.time.microseconds, frame.frame.sequence))
            return frames.count < 16
        }
        let first = try #require(frames.first), last = try #require(frames.last)
        let counted = Double(last.sequence &- first.sequence)
        try #require(counted > 0, "\(frames)")
        return (source.format?.framesPerSecond, Double(last.time - first.time) / 1000 / counted, errors.withLock { $0 })
    }

    /// vivid keeps the rate last set (for every later opener): the tests put it back.
    func keepingVividsRate(_ node: String, _ body: () throws -> Void) throws {
        let original = try VideoCaptureStream(path: node, width: 320, height: 240).format.framesPerSecond
        defer { _ = try? VideoCaptureStream(path: node, width: 320, height: 240, framesPerSecond: original) }
        try body()
    }

    @Test(.timeLimit(.minutes(2))) func theRingRunsAtTheRateAskedFor() throws {
        let node = try #require(vividNode(), "no vivid-000-vid-cap in /sys/class/video4linux (the guest loads vivid)")
        try keepingVividsRate(node) {
            let at25 = try ring(node, fps: 25)
            let at10 = try ring(node, fps: 10)
            // Not asked: the rate the device has, whoever set it last (here: 10).
            let driver = try ring(node, fps: nil)
            print(
                "fps: asked 25 → driver \(at25.reported ?? 0), interval \(at25.intervalMs) ms; asked 10 → \(at10.reported ?? 0), \(at10.intervalMs) ms; not asked → \(driver.reported ?? 0), \(driver.intervalMs) ms"
            )
            #expect(at25.reported == 25 && at25.errors.isEmpty, "\(at25)")
            #expect(at25.intervalMs >= 36 && at25.intervalMs <= 44, "25 fps: interval \(at25.intervalMs) ms")
            #expect(at10.reported == 10 && at10.errors.isEmpty, "\(at10)")
            #expect(at10.intervalMs >= 90 && at10.intervalMs <= 110, "10 fps: interval \(at10.intervalMs) ms")
            #expect(driver.reported == 10 && driver.errors.isEmpty, "\(driver)")
        }
    }

    @Test(.timeLimit(.minutes(2))) func aRateTheDriverCannotGiveIsItsChoiceAndSaidOnce() throws {
        let node = try #require(vividNode(), "no vivid-000-vid-cap in /sys/class/video4linux (the guest loads vivid)")
        try keepingVividsRate(node) {
            // Above vivid's fastest at 320×180, and between two of its rates.
            let fast = try ring(node, fps: 240)
            let between = try ring(node, fps: 27)
            print(
                "fps: asked 240 → driver \(fast.reported ?? 0), interval \(fast.intervalMs) ms; asked 27 → \(between.reported ?? 0), interval \(between.intervalMs) ms"
            )
            #expect(fast.reported == 60, "\(fast)")
            #expect(fast.intervalMs >= 14 && fast.intervalMs <= 20, "60 fps: interval \(fast.intervalMs) ms")
            #expect(fast.errors.map(\.code) == [.frameRateNotAvailable], "\(fast.errors)")
            #expect(
                fast.errors.first?.context
                    == "capture stream of \(node) at 320×180: asked for 240 fps, the driver gives 60 fps at this size")
            #expect(between.reported == 30, "\(between)")
            #expect(
                between.errors.first?.context.hasSuffix("asked for 27 fps, the driver gives 30 fps at this size") == true,
                "\(between.errors)")
        }
    }

    /// The daemon reports it as an `error` line, `code: camera-fps`, and takes photos on.
    @Test(.timeLimit(.minutes(2))) func theDaemonReportsTheRateItGot() throws {
        let node = try #require(vividNode(), "no vivid-000-vid-cap in /sys/class/video4linux (the guest loads vivid)")
        try keepingVividsRate(node) {
            let daemon = try ReliabilityDaemon(
                config: """
                    [camera]
                    device = "none"
                    capture-device = "\(node)"
                    width = 320
                    height = 240
                    fps = 240
                    [sound]
                    play = "off"
                    """)
            let lines = { daemon.objects(event: "error").filter { $0["code"] as? String == "camera-fps" } }
            #expect(daemon.waitFor(timeout: .seconds(15)) { _ in !lines().isEmpty }, "\(daemon)")
            #expect(
                (lines().first?["message"] as? String)?.contains("asked for 240 fps, the driver gives 60 fps at this size") == true,
                "\(lines())")
            #expect(daemon.process.isRunning && daemon.stop() == 0, "\(daemon)")
        }
    }
}
