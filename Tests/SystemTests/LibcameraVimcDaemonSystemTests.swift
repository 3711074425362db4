import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The daemon with `[camera] backend = "libcamera"` on vimc, libcamera's one streaming camera
/// in the test VM (docs/libcamera.md). vimc offers BGR888 only, and the capture stream takes
/// MJPEG or YUYV from libcamera: a press must fail with an error that says so, write nothing,
/// and leave the daemon running.
@Suite(.systemTest, .serialized, .timeLimit(.minutes(3)))
struct LibcameraVimcDaemonSystemTests {
    init() throws {
        let problem = Vimc.problem
        try #require(problem == nil, Comment(rawValue: problem ?? ""))
    }

    @Test func aClickOnVimcSaysItOffersNeitherMJPEGNorYUYVAndWritesNothing() throws {
        let scratch = try DaemonScratch("libcamera-vimc")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            backend = "libcamera"
            libcamera-camera = "platform/vimc.0 \(Vimc.sensorName)"
            width = 360
            height = 240

            [output]
            directory = "\(scratch.output)"
            """)
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")

        try keys.click(.volumeDown)
        let began = try #require(daemon.waitFor(DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let press = try #require(began.object.int("press"))
        let failure = daemon.waitFor(timeout: .seconds(30), from: began.index) { object in
            (object.string("message") ?? object.string("error") ?? "").contains("neither MJPEG nor YUYV")
        }
        #expect(failure != nil, "no error naming the formats for press \(press)\n\(daemon.transcript)")
        if let failure {
            let text = "\(failure.object)"
            #expect(text.contains("BG24"), "the error does not say what vimc offers: \(text)")
        }
        #expect(daemon.isRunning, "\(daemon.transcript)")
        let written = (try? FileManager.default.contentsOfDirectory(atPath: scratch.output)) ?? []
        #expect(written.isEmpty, "files written: \(written)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }
}
