#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import EvcaptureDaemon
import Evdev
import Vocabulary
import Foundation
import Testing

/// A jog wheel that reports a position counter, on the real kernel: a uinput device with
/// the Contour ShuttleXpress's identity (USB 0b33:0020) and capabilities, given its role by
/// the shipped udev rule (`REL_DIAL=slider:counter`), driving the fake UVC camera's zoom
/// through `evcapture run`.
///
/// One jog step is one zoom detent: 0.08× = 8 raw zoom units (100…500).
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct JogSystemTests {
    /// Writes one jog report: REL_DIAL `position`.
    static func report(_ device: UinputDevice, _ position: Int32) throws {
        try device.write(.rel, EventCode.relDial.code, position)
        try device.write(.syn, 0, 0)
    }

    /// The raw zoom values the daemon reported, in order.
    static func zooms(_ daemon: DaemonProcess) -> [Int] {
        daemon.objects.filter { $0.event == "control" && $0.string("control") == "zoom" }.compactMap { $0.int("raw") }
    }

    @Test(.needsFakeCamera)
    func jogTurnsMoveTheZoomByExactlyTheirStepsAcrossTheWrapAndAfterAReconnect() throws {
        let camera = try FakeCamera()
        let cameraNode = try camera.start()
        defer { try? camera.stop() }
        var jog: UinputDevice? = try fixtureDevice("contour-shuttlexpress-jog")
        let (scratch, daemon) = try startDaemonWithActionsOff("jog", camera: cameraNode, devices: [jog!])
        defer { withExtendedLifetime(scratch) { _ = daemon.terminate() } }
        let added = try #require(daemon.objects.first(where: DaemonLines.deviceAdded(jog!.node)), "\(daemon.transcript)")
        #expect(added.string("device") == "Contour Design ShuttleXpress", "\(added)")

        // The first report is a position (the wheel sits wherever it was left): no movement.
        // Then +1, +2, +2 up to 255, +2 across the wrap to 1 (the kernel never passes a REL
        // value 0), +1.
        for position: Int32 in [250, 251, 253, 255, 1, 2] { try Self.report(jog!, position) }
        #expect(camera.waitUntilReceived("zoom_absolute", 164, timeout: .seconds(20)), "\(camera.log)\n\(daemon.transcript)")
        // Back: −1, −2 across the wrap to 255. Waited for in the daemon's lines from here on
        // (140 was passed on the way up): unplugged before the daemon read them, the reports
        // would be lost with the device.
        let beforeBack = daemon.objects.count
        try Self.report(jog!, 1)
        try Self.report(jog!, 255)
        let back = daemon.waitFor(from: beforeBack) { $0.event == "control" && $0.string("control") == "zoom" && $0.int("raw") == 140 }
        #expect(back != nil, "\(camera.log)\n\(daemon.transcript)")

        // Unplugged and plugged in again (a new device, a new node): its first report, from
        // another position, is again only a reference.
        let oldNode = jog!.node
        jog!.destroy()
        jog = nil
        let removed = try #require(
            daemon.waitFor { $0.event == "device" && $0.string("change") == "removed" && $0.string("node") == oldNode },
            "\(daemon.transcript)")
        let again = try fixtureDevice("contour-shuttlexpress-jog")
        // The kernel may give the new device the old node: look for its `added` after the removal.
        try #require(daemon.waitFor(from: removed.index, DaemonLines.deviceAdded(again.node)) != nil, "\(daemon.transcript)")
        let afterReconnect = daemon.objects.count
        for position: Int32 in [100, 101, 103] { try Self.report(again, position) }
        let last = daemon.waitFor(from: afterReconnect) { $0.event == "control" && $0.int("raw") == 164 }
        #expect(last != nil, "\(camera.log)\n\(daemon.transcript)")

        // Exactly these values, each once: no jump from a first report or a repeat. (The shuttle
        // ring moves at a rate while held, on the daemon's clock: ControlsRateTests and
        // JogReplayTests, on a manual one.)
        #expect(Self.zooms(daemon) == [108, 124, 140, 156, 164, 156, 140, 148, 164], "\(daemon.transcript)")
        let received = camera.received().filter { $0.control == "zoom_absolute" }.map(\.value)
        #expect(received.allSatisfy { (100...164).contains($0) }, "zoom values the camera received: \(received)")
        #expect(received.last == 164, "\(received)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        #expect(!daemon.objects.contains { $0.event == "error" }, "\(daemon.transcript)")
    }
}
