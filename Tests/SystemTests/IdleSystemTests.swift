#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Evdev
import Foundation
import Testing

/// BENCHMARKS.md figure 4 as a test: the daemon with five input devices and a camera open
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
        #expect(woken.isEmpty, "threads woken while idle (tid: context switches before → after): \(woken.map { "\($0.key): \(start[$0.key] ?? -1) → \($0.value)" })")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }

    /// A device with no role is muted in the kernel (EVIOCSMASK): a mouse moved 200 times and
    /// a keyboard set to `kind = "ignore"` typed on wake none of the daemon's threads, while
    /// another reader of the mouse's node still gets every event; a press on a device with a
    /// role still reaches the daemon (and wakes it: the count can move).
    @Test func devicesWithoutARoleWakeNothing() throws {
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let keyboard = try fixtureDevice("usb-keyboard-typing-and-volume")
        let mouse = try UinputDevice(
            DeviceDescription(name: "evcapture test mouse", bus: .usb, codes: [.relX, .relY, .btnLeft, .synReport]), autorepeat: false)
        defer { mouse.destroy() }
        let keyboardName = try EvemuRecording.load(path: DaemonPaths.fixture("usb-keyboard-typing-and-volume")).description.name
        let (scratch, daemon) = try startDaemonWithActionsOff(
            "mute", camera: "none", devices: [keys, keyboard, mouse],
            moreConfig: "[devices.\"\(keyboardName)\"]\nkind = \"ignore\"\n")
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
        for _ in 0..<10 { try keyboard.click(.volumeDown, hold: .milliseconds(20)) }
        for _ in 0..<10 { try keyboard.click(.key(30)) }  // KEY_A
        Thread.sleep(forTimeInterval: 1)
        let end = try Self.threads(of: daemon.pid)
        let woken = end.filter { tid, switches in start[tid] != switches }
        #expect(woken.isEmpty, "threads woken by devices without a role (tid: switches before → after): \(woken.map { "\($0.key): \(start[$0.key] ?? -1) → \($0.value)" })")
        #expect(!daemon.objects.dropFirst(linesBefore).contains { $0.event == "capture" }, "\(daemon.transcript)")
        let mouseLine = daemon.objects.first(where: DaemonLines.deviceAdded(mouse.node)).map { "\($0)" } ?? "none"
        #expect(seen == 200, "another reader of the mouse's node got \(seen) of 200 REL_X events; the daemon's device line: \(mouseLine)")

        try keys.click(.volumeDown, hold: .milliseconds(50))
        #expect(daemon.waitFor(from: linesBefore, DaemonLines.capture("ended", node: keys.node)) != nil, "\(daemon.transcript)")
        let after = try Self.threads(of: daemon.pid)
        #expect(after != end, "a press with a role wakes the daemon: the count is a live one")
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
