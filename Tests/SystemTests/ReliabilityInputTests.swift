#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Evdev
import Vocabulary
import Foundation
import Testing

/// The daemon under input abuse on a real kernel: hotplug storms, lost events, hostile
/// device names, no root.
@Suite(.systemTest, .serialized)
struct ReliabilityInputTests {
    static func keys(_ name: String, extra: Set<EventCode> = []) -> DeviceDescription {
        DeviceDescription(
            name: name, bus: .host, vendor: 1, product: 1, codes: Set<EventCode>([.synReport, .volumeDown, .volumeUp]).union(extra))
    }

    static func press(_ d: UinputDevice, _ code: EventCode, _ value: Int32) throws {
        try d.writeFrame([InputEvent(time: Timestamp(microseconds: 0), code, value)])
    }

    /// 100 uinput devices created and destroyed over 10 s with presses in flight, some
    /// removed while a key is down: the daemon keeps running, closes every node (no
    /// descriptor leak), and closes every press it began.
    @Test(.timeLimit(.minutes(2))) func hotplugStormWithPressesInFlight() throws {
        let daemon = try ReliabilityDaemon(config: reliabilityConfig())
        // one device in, a click, and out first, so descriptors made once and lazily (the
        // dispatch timerfd behind the first hold-deadline sleep) exist before counting
        do {
            let warm = try UinputDevice(Self.keys("evcapture storm warm-up"), autorepeat: false)
            #expect(daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == warm.node } })
            try Self.press(warm, .volumeDown, 1)
            try Self.press(warm, .volumeDown, 0)
            #expect(daemon.waitFor { _ in daemon.captures("ended").count == 1 }, "\(daemon)")
            warm.destroy()
            #expect(daemon.waitFor { $0.contains { $0["change"] as? String == "removed" && $0["node"] as? String == warm.node } })
        }
        let before = daemon.openDescriptors()

        var devices: [UinputDevice?] = []
        var heldAtRemoval: [String] = []  // nodes removed with a begun press still down
        let start = ContinuousClock.now
        for i in 0..<100 {
            devices.append(try UinputDevice(Self.keys("evcapture storm \(i)"), autorepeat: false))
            // i-1: press; i-2: release (a click) and press the other key; i-4: removed,
            // every other one (even i) with that key still down (a press in flight).
            // Every even device is pressed only once the daemon has opened it: a press
            // written before the open is, rightly, no press for the daemon, and on a loaded
            // host udev reports an add several hundred milliseconds late, so without the wait
            // the storm can pass without presses. The odd ones race the daemon freely.
            if i >= 1, let d = devices[i - 1] {
                if (i - 1) % 2 == 0 {
                    daemon.waitFor(timeout: .seconds(3)) {
                        $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == d.node }
                    }
                }
                try Self.press(d, .volumeDown, 1)
            }
            // Every tenth removal is made certain to hit a press in flight: its press is
            // waited for (begun) before the removal.
            let certain = { (index: Int) in index % 10 == 6 }
            if i >= 2, let d = devices[i - 2] {
                try Self.press(d, .volumeUp, 1)
            }
            if i >= 4, let d = devices[i - 4] {
                if certain(i - 4) {
                    let begun = daemon.waitFor(timeout: .seconds(3)) {
                        $0.contains {
                            $0["phase"] as? String == "began" && $0["node"] as? String == d.node
                                && $0["button"] as? String == "KEY_VOLUMEUP"
                        }
                    }
                    if begun { heldAtRemoval.append(d.node) }
                }
                if i % 2 == 1 { try Self.press(d, .volumeUp, 0) }
                d.destroy()
                devices[i - 4] = nil
            }
            let next = start + .milliseconds(100 * (i + 1))
            let left = next - ContinuousClock.now
            if left > .zero { usleep(UInt32(left.components.attoseconds / 1_000_000_000_000 + left.components.seconds * 1_000_000)) }
        }
        for i in devices.indices { devices[i]?.destroy(); devices[i] = nil }
        let stormSeconds = Double((ContinuousClock.now - start).components.seconds)

        // every storm device that was added is removed again
        let settled = daemon.waitFor(timeout: .seconds(30)) { objects in
            let storm = objects.filter {
                ($0["device"] as? String)?.hasPrefix("evcapture storm ") == true && $0["event"] as? String == "device"
            }
            let added = storm.filter { $0["change"] as? String == "added" }.count
            let removed = storm.filter { $0["change"] as? String == "removed" }.count
            return added > 0 && added == removed
        }
        #expect(settled, "the daemon did not report the removal of every storm device\n\(daemon)")
        #expect(daemon.process.isRunning, "the daemon died during the storm\n\(daemon)")
        // the last close happens on the I/O thread just after the removal line
        var after = daemon.openDescriptors()
        _ = pollUntil(timeout: .seconds(5)) {
            after = daemon.openDescriptors()
            return after.count <= before.count
        }
        #expect(
            after.count == before.count,
            "descriptors before the storm:\n\(before.joined(separator: "\n"))\nafter:\n\(after.joined(separator: "\n"))")

        let objects = daemon.objects()
        let added = objects.filter {
            $0["change"] as? String == "added" && ($0["device"] as? String)?.hasPrefix("evcapture storm ") == true
        }
        let began = objects.filter { $0["phase"] as? String == "began" }
        let removedInFlight = objects.filter { $0["reason"] as? String == "device-removed" }
        let (open, orphans) = unmatchedPresses(objects)
        #expect(open.isEmpty, "presses began and never ended or cancelled: \(open)\n\(daemon)")
        #expect(orphans.isEmpty, "presses ended that never began: \(orphans)")
        // the storm really exercised presses, including removals mid-press
        #expect(added.count >= 50, "only \(added.count) of 100 devices were opened by the daemon")
        #expect(began.count >= 25, "only \(began.count) presses began\n\(daemon)")
        // Removed mid-press: the kernel itself releases held keys when a device is
        // unregistered, so such a press ends (`ended`) or, if the removal is seen first,
        // is `cancelled` (device-removed); either way it is closed (checked above).
        #expect(heldAtRemoval.count >= 5, "only \(heldAtRemoval.count) devices were removed with a press in flight\n\(daemon)")
        print(
            "storm: \(stormSeconds) s, \(added.count)/100 devices opened, \(began.count) presses began, "
                + "\(heldAtRemoval.count) removed mid-press, \(removedInFlight.count) presses cancelled device-removed, descriptors \(before.count) → \(after.count)"
        )
        #expect(daemon.stop() == 0, "\(daemon)")
    }

    /// A key held while the reader falls behind (the daemon stopped with SIGSTOP, the
    /// kernel's buffer overflows: SYN_DROPPED): the press is cancelled with reason
    /// events-lost; nothing is stuck: the next press begins and ends. The device is
    /// dedicated (`grab = true`), so the daemon takes all its events, the MSC_SCAN flood
    /// included; of a device shared with the desktop it takes only the keys with a role,
    /// and such a flood never reaches it (IdleSystemTests).
    @Test(.timeLimit(.minutes(2))) func synDroppedOnAHeldKeyCancelsAndRecovers() throws {
        let daemon = try ReliabilityDaemon(
            config: reliabilityConfig(extra: "[devices.dropped]\nname = \"evcapture dropped\"\ngrab = true\n"))
        let scan = EventCode(.msc, 4)  // MSC_SCAN: harmless filler the device may send
        let device = try UinputDevice(Self.keys("evcapture dropped", extra: [scan]), autorepeat: false)
        defer { device.destroy() }
        #expect(daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == device.node } })

        func flood() throws {
            kill(daemon.pid, SIGSTOP)
            defer { kill(daemon.pid, SIGCONT) }
            // far beyond evdev's per-client buffer (64 events for a small device)
            for i in 0..<600 { try device.writeFrame([InputEvent(time: Timestamp(microseconds: 0), scan, Int32(i))]) }
        }

        // 1. held through the overflow: cancelled, then the release is not an `ended`
        try Self.press(device, .volumeDown, 1)
        #expect(daemon.waitFor { _ in daemon.captures("began").count == 1 }, "\(daemon)")
        try flood()
        #expect(daemon.waitFor { _ in daemon.captures("cancelled").count == 1 }, "\(daemon)")
        let cancelled = daemon.captures("cancelled").first
        #expect(cancelled?["reason"] as? String == "events-lost", "\(daemon)")
        #expect(cancelled?["press"] as? Int == daemon.captures("began").first?["press"] as? Int)
        try Self.press(device, .volumeDown, 0)

        // 2. released during the overflow: the resync finds it up; cancelled too
        try Self.press(device, .volumeDown, 1)
        #expect(daemon.waitFor { _ in daemon.captures("began").count == 2 }, "\(daemon)")
        kill(daemon.pid, SIGSTOP)
        for i in 0..<300 { try device.writeFrame([InputEvent(time: Timestamp(microseconds: 0), scan, Int32(i))]) }
        try Self.press(device, .volumeDown, 0)
        for i in 0..<300 { try device.writeFrame([InputEvent(time: Timestamp(microseconds: 0), scan, Int32(i))]) }
        kill(daemon.pid, SIGCONT)
        #expect(daemon.waitFor { _ in daemon.captures("cancelled").count == 2 }, "\(daemon)")
        #expect(daemon.captures("cancelled").last?["reason"] as? String == "events-lost")

        // 3. nothing stuck: a normal click begins and ends
        try Self.press(device, .volumeDown, 1)
        try Self.press(device, .volumeDown, 0)
        #expect(daemon.waitFor { _ in daemon.captures("ended").count == 1 }, "\(daemon)")
        #expect(daemon.captures("began").count == 3)
        let (open, orphans) = unmatchedPresses(daemon.objects())
        #expect(open.isEmpty && orphans.isEmpty, "open \(open), orphans \(orphans)\n\(daemon)")
        #expect(daemon.stop() == 0, "\(daemon)")
    }

    /// A device name full of shell metacharacters reaches an exec hook verbatim (argv and
    /// environment, no shell): nothing in it runs.
    @Test(.timeLimit(.minutes(1))) func hostileDeviceNameReachesTheHookVerbatim() throws {
        // relative paths: the hook runs in the daemon's directory (the test's scratch)
        let evil = "x$(touch pw1);touch pw2|`touch pw3`&'\"*\\ $HOME"
        let scratch = try ScratchDirectory(prefix: "hook")
        let envFile = scratch.url.appendingPathComponent("environ").path
        let daemon = try ReliabilityDaemon(
            config: reliabilityConfig(
                extra: """
                    [[hooks]]
                    argv = ["/bin/cp", "/proc/self/environ", "\(envFile)"]
                    on = ["began"]
                    """))
        let device = try UinputDevice(Self.keys(evil), autorepeat: false)
        defer { device.destroy() }
        #expect(daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == device.node } })
        try Self.press(device, .volumeDown, 1)
        try Self.press(device, .volumeDown, 0)
        #expect(pollUntil(timeout: .seconds(10)) { FileManager.default.fileExists(atPath: envFile) }, "the hook did not run\n\(daemon)")
        _ = pollUntil(timeout: .seconds(2)) { daemon.objects(event: "action").contains { $0["action"] as? String == "hook" } }
        let environ = (try? Data(contentsOf: URL(fileURLWithPath: envFile))) ?? Data()
        let vars = environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        #expect(vars.contains("EVCAPTURE_DEVICE=\(evil)"), "\(vars.filter { $0.hasPrefix("EVCAPTURE") })")
        #expect(daemon.objects(event: "capture").first?["device"] as? String == evil)
        let made = (try? FileManager.default.contentsOfDirectory(atPath: daemon.scratch.url.path)) ?? []
        #expect(!made.contains { $0.hasPrefix("pw") }, "something in the name was executed: \(made)")
        #expect(daemon.stop() == 0)
    }

    /// With the project's udev rules, the daemon reads input devices as an unprivileged
    /// user in the `input` and `video` groups (no root, no capabilities).
    @Test(.timeLimit(.minutes(1))) func runsWithoutRootThroughTheUdevRules() throws {
        guard let input = getgrnam("input")?.pointee.gr_gid, let video = getgrnam("video")?.pointee.gr_gid else {
            Issue.record("no input or video group in /etc/group")
            return
        }
        let nobody: uid_t = 65534
        let device = try UinputDevice(Self.keys("evcapture unprivileged"), autorepeat: false)
        defer { device.destroy() }
        try waitForUdevBlocking([device.node])
        var st = stat()
        #expect(stat(device.node, &st) == 0)
        #expect(
            st.st_gid == input && st.st_mode & 0o777 == 0o660,
            "\(device.node): group \(st.st_gid), mode \(String(st.st_mode & 0o777, radix: 8))")

        let daemon = try ReliabilityDaemon(config: reliabilityConfig(), user: (nobody, 65534, [input, video]))
        let status = (try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8)) ?? ""
        let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }.map(String.init) ?? "?"
        #expect(uid.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().allSatisfy { $0 == "65534" }, "\(uid)")
        #expect(daemon.waitFor { $0.contains { $0["change"] as? String == "added" && $0["node"] as? String == device.node } }, "\(daemon)")
        try Self.press(device, .volumeDown, 1)
        try Self.press(device, .volumeDown, 0)
        #expect(daemon.waitFor { _ in daemon.captures("ended").count == 1 }, "\(daemon)")
        #expect(daemon.captures("began").first?["node"] as? String == device.node)
        #expect(daemon.stop() == 0, "\(daemon)")
    }
}
