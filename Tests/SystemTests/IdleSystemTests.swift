#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Evdev
import Vocabulary
import Foundation
import Testing

/// BENCHMARKS.md's "idle" as a test: the daemon with five input devices and a camera open
/// does not wake while nothing happens — not one of its threads, not even libdispatch's
/// 1 Hz pool monitor (the daemon runs its tasks on `MainThreadExecutor`, and handles
/// SIGTERM without a `DispatchSource`).
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct IdleSystemTests {
    @Test(.needsFakeCamera)
    func noThreadWakesWhileIdle() throws {
        let camera = try FakeCamera()
        let cameraNode = try camera.start()
        defer { try? camera.stop() }
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let knob = try fixtureDevice("rotary-encoder-rel-x")
        let others = try ["bluez-avrcp-headset", "griffin-powermate", "usb-keyboard-typing-and-volume"].map(fixtureDevice)
        let (scratch, daemon) = try startDaemonWithActionsOff("idle", camera: cameraNode, devices: [keys, knob] + others)
        // the scratch directory (config, state) lives until the daemon is gone
        defer { withExtendedLifetime(scratch) { _ = daemon.terminate() } }
        try #require(daemon.waitFor(DaemonLines.session("started")) != nil, "\(daemon.transcript)")

        // Some work first, the timers included: a zoom step, and a long press (its `held` comes
        // from the daemon's deadline timer, a Task.sleep).
        try knob.move(.relX, by: 1)
        #expect(camera.waitUntilReceived("zoom_absolute", 108, timeout: .seconds(20)), "\(camera.log)\n\(daemon.transcript)")
        let before = daemon.objects.count
        try keys.click(.volumeDown, hold: .seconds(1))
        #expect(daemon.waitFor(from: before, DaemonLines.capture("held", node: keys.node)) != nil, "\(daemon.transcript)")
        try #require(daemon.waitFor(from: before, DaemonLines.capture("ended", node: keys.node)) != nil, "\(daemon.transcript)")

        // Settled (gesture windows, the control state file's write), then 4 s of nothing.
        Thread.sleep(forTimeInterval: 2)
        let start = try Self.threads(of: daemon.pid)
        Thread.sleep(forTimeInterval: 4)
        let end = try Self.threads(of: daemon.pid)
        let woken = end.filter { tid, switches in start[tid] != switches }
        #expect(Set(start.keys) == Set(end.keys), "threads came or went while idle: \(start.keys.sorted()) → \(end.keys.sorted())")
        #expect(
            woken.isEmpty,
            "threads woken while idle (tid: context switches before → after): \(woken.map { "\($0.key): \(start[$0.key] ?? -1) → \($0.value)" })"
        )
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }

    /// The daemon asks the kernel (EVIOCSMASK) only for the events it needs: a mouse moved 200
    /// times, a device set to `kind = "ignore"` pressed, and typing on a keyboard whose
    /// volume keys have a role (keys with their MSC_SCAN, as a USB keyboard sends them) wake
    /// none of its threads, while another reader of the mouse's node still gets every event;
    /// that keyboard's volume key and a dedicated device's key still reach the daemon (and
    /// wake it: the count is a live one).
    @Test func eventsWithoutARoleWakeNothing() throws {
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let keyboard = try fixtureDevice("usb-keyboard-typing-and-volume")
        let ignored = try fixtureDevice("thinkpad-extra-buttons-camera")
        let mouse = try UinputDevice(
            DeviceDescription(name: "evcapture test mouse", bus: .usb, codes: [.relX, .relY, .btnLeft, .synReport]), autorepeat: false)
        defer { mouse.destroy() }
        let ignoredName = try EvemuRecording.load(path: Fixtures.evemu("thinkpad-extra-buttons-camera")).description.name
        let (scratch, daemon) = try startDaemonWithActionsOff(
            "mute", camera: "none", devices: [keys, keyboard, ignored, mouse],
            moreConfig: "[devices.\"\(ignoredName)\"]\nkind = \"ignore\"\n")
        defer { withExtendedLifetime(scratch) { _ = daemon.terminate() } }
        try #require(daemon.waitFor(DaemonLines.session("started")) != nil, "\(daemon.transcript)")
        let otherReader = try EvdevDevice.open(mouse.node)
        defer { otherReader.close() }

        Thread.sleep(forTimeInterval: 2)
        let linesBefore = daemon.objects.count
        let start = try Self.threads(of: daemon.pid)
        // Read as it comes: a reader's kernel buffer holds 64 events.
        var seen = 0
        for batch in 0..<10 {
            for i in 0..<20 { try mouse.move(.relX, by: (batch + i) % 2 == 0 ? 3 : -3) }
            Thread.sleep(forTimeInterval: 0.05)
            seen += otherReader.readAvailable().reduce(0) { n, input in
                if case .frame(let f) = input { n + f.events.filter { $0.type == .rel && $0.code == EventCode.relX.code }.count } else { n }
            }
        }
        try mouse.click(.btnLeft)
        for _ in 0..<10 { try ignored.click(.camera, hold: .milliseconds(20)) }
        for _ in 0..<10 { try ignored.click(.volumeDown) }
        for (code, scan) in [(EventCode.key(30), Int32(0x70004)), (.key(48), 0x70005)] {  // KEY_A, KEY_B
            for value in [Int32(1), 0] {
                try keyboard.write(.msc, 4, scan)  // MSC_SCAN
                try keyboard.write(.key, code.code, value)
                try keyboard.write(.syn, 0, 0)
            }
        }
        Thread.sleep(forTimeInterval: 1)
        let end = try Self.threads(of: daemon.pid)
        let woken = end.filter { tid, switches in start[tid] != switches }
        #expect(
            woken.isEmpty,
            "threads woken by events without a role (tid: switches before → after): \(woken.map { "\($0.key): \(start[$0.key] ?? -1) → \($0.value)" })"
        )
        #expect(!daemon.objects.dropFirst(linesBefore).contains { $0.event == "capture" }, "\(daemon.transcript)")
        let mouseLine = daemon.objects.first(where: DaemonLines.deviceAdded(mouse.node)).map { "\($0)" } ?? "none"
        #expect(seen == 200, "another reader of the mouse's node got \(seen) of 200 REL_X events; the daemon's device line: \(mouseLine)")

        // The keys with a role: the shared keyboard's volume key, the dedicated device's key.
        try keyboard.click(.volumeDown, hold: .milliseconds(50))
        #expect(daemon.waitFor(from: linesBefore, DaemonLines.capture("ended", node: keyboard.node)) != nil, "\(daemon.transcript)")
        let afterKeyboard = try Self.threads(of: daemon.pid)
        #expect(afterKeyboard != end, "a press with a role wakes the daemon: the count is a live one")
        try keys.click(.volumeDown, hold: .milliseconds(50))
        #expect(daemon.waitFor(from: linesBefore, DaemonLines.capture("ended", node: keys.node)) != nil, "\(daemon.transcript)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }

    /// Voluntary + involuntary context switches of each thread of `pid`, by thread id.
    static func threads(of pid: pid_t) throws -> [Int: Int] {
        var result: [Int: Int] = [:]
        for tid in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            guard let id = Int(tid),
                let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/status", encoding: .utf8)
            else { continue }
            var switches = 0
            for line in status.split(separator: "\n")
            where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                switches += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
            result[id] = switches
        }
        return result
    }
}
