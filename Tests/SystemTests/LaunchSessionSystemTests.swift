import EvcaptureTesting
import Evdev
import Foundation
import Testing
import V4L2

@testable import EvcaptureDaemon

/// `[session] mode = "launch"` on the real kernel: the camera streams only after the launch
/// button, and the session idle-stops (streaming off, grabs released).
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct LaunchSessionSystemTests {
    /// Whether another program could start streaming from `node` now (the daemon's ring holds
    /// it while its stream runs: S_FMT or STREAMON says busy).
    func vividIsFree(_ node: String) -> Bool {
        do {
            let stream = try VideoCaptureStream(path: node, width: 320, height: 240)
            try stream.start()
            stream.stop()
            return true
        } catch {
            return false
        }
    }

    /// Whether the daemon holds the grab of `node` (another reader sees no events).
    func grabbed(_ keys: UinputDevice, _ daemon: DaemonProcess) throws -> Bool {
        let other = try EvdevDevice.open(keys.node)
        defer { other.close() }
        _ = other.readAvailable()
        try keys.click(.volumeDown)
        Thread.sleep(forTimeInterval: 0.3)
        return other.readAvailable().isEmpty
    }

    @Test(.enabled(if: vividNode() != nil, "needs vivid (vivid-000-vid-cap)"))
    func theLaunchButtonStartsStreamingAndIdleStopsIt() throws {
        let vivid = try #require(vividNode())
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let scratch = try DaemonScratch("launch")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [session]
            mode = "launch"
            launch-button = "KEY_VOLUMEUP"
            idle-stop = 3

            [camera]
            device = "none"
            capture-device = "\(vivid)"
            width = 320
            height = 240

            [output]
            directory = "\(scratch.output)"
            """)
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { _ = daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")

        // Not launched: no session, the camera is not streaming, presses are nothing.
        try keys.click(.volumeDown)
        Thread.sleep(forTimeInterval: 1)
        #expect(!daemon.objects.contains(where: DaemonLines.session("started")), "\(daemon.transcript)")
        #expect(!daemon.objects.contains { $0.event == "capture" }, "\(daemon.transcript)")
        #expect(vividIsFree(vivid), "streaming before the launch")

        // The launch press: the session starts (reason launch), the ring streams, the
        // device is grabbed; the launch press itself is no capture.
        try keys.click(.volumeUp)
        let started = try #require(daemon.waitFor(DaemonLines.session("started")), "\(daemon.transcript)")
        #expect(started.object.string("reason") == "launch")
        // (Checked once the daemon says so: probing the camera meanwhile would race its open.)
        #expect(pollUntil(timeout: .seconds(10)) { daemon.stderr.contains("capture stream started") }, "\(daemon.transcript)")
        #expect(!vividIsFree(vivid), "the ring is not streaming")
        #expect(!daemon.objects.contains { $0.event == "capture" }, "the launch press was a capture: \(daemon.transcript)")

        // A click takes a photo of the press.
        let before = daemon.objects.count
        try keys.click(.volumeDown)
        let began = try #require(daemon.waitFor(from: before, DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let press = try #require(began.object.int("press"))
        let photo = try #require(daemon.waitFor(DaemonLines.action("photo", press: press)), "\(daemon.transcript)")
        #expect(photo.object.double("frame_time") != nil)

        // 3 s without input: stopped (reason idle), streaming off, grab released.
        let stopped = try #require(
            daemon.waitFor(timeout: .seconds(15), DaemonLines.session("stopped")), "no idle stop\n\(daemon.transcript)")
        #expect(stopped.object.string("reason") == "idle")
        let idleAfter = try #require(stopped.object.double("time")) - (try #require(began.object.double("time")))
        #expect(idleAfter >= 3 && idleAfter < 5, "stopped \(idleAfter) s after the last press")
        #expect(pollUntil(timeout: .seconds(5)) { daemon.stderr.contains("capture stream stopped") }, "\(daemon.transcript)")
        #expect(vividIsFree(vivid), "still streaming after the idle stop")
        #expect(try !grabbed(keys, daemon), "still grabbed after the idle stop")
        #expect(!daemon.objects.contains { $0.event == "error" }, "\(daemon.transcript)")
    }
}
