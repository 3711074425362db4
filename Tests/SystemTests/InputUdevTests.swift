#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing
import Evdev
import Vocabulary
import LinuxIO
import Udev
import Synchronization
import EvcaptureDaemon
import Camera
import Output
import ConfigFile

@Suite(.systemTest)
struct InputUdevTests {
    @Test func monitorSeesExistingDevicesThenHotplugAddAndRemove() async throws {
        let description = try EvemuRecording.load(path: Fixtures.evemu("griffin-powermate")).description
        let before = try UinputDevice(description)
        defer { before.destroy() }
        let loop = try IOLoop()
        defer { loop.stop() }
        let (monitor, stream) = try UdevInputMonitor.start(on: loop)
        defer { monitor.stop() }
        // The device made before start is enumerated.
        let initial = await collect(stream, timeout: .seconds(10)) { items in
            items.contains { if case .added(let d) = $0 { d.node == before.node } else { false } }
        }
        #expect(initial.contains { if case .added(let d) = $0 { d.node == before.node } else { false } })

        let later = try UinputDevice(description)
        let added = await collect(stream, timeout: .seconds(10)) { items in
            items.contains { if case .added(let d) = $0 { d.node == later.node } else { false } }
        }
        let addedDevice = added.compactMap { if case .added(let d) = $0, d.node == later.node { d } else { nil } }.first
        #expect(addedDevice != nil, "no add event for \(later.node) (source: \(monitor.source))")
        if let addedDevice {
            #expect(addedDevice.syspath.hasSuffix("/" + (later.node.split(separator: "/").last.map(String.init) ?? "")))
            if monitor.source == .udev {
                #expect(addedDevice.properties["ID_INPUT"] == "1")
            }
        }
        let node = later.node
        later.destroy()
        let removed = await collect(stream, timeout: .seconds(10)) { items in
            items.contains { if case .removed(let d) = $0 { d.node == node } else { false } }
        }
        #expect(removed.contains { if case .removed(let d) = $0 { d.node == node } else { false } })
        // No duplicate add for a device seen by both enumeration and the monitor.
        let all = initial + added + removed
        let addsOfBefore = all.filter { if case .added(let d) = $0 { d.node == before.node } else { false } }
        #expect(addsOfBefore.count == 1)
    }

    @Test func deviceWatcherOpensClassifiesAndFollowsRemoval() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let watcher = DeviceWatcher(loop: loop)
        let events = try watcher.events()
        let description = try EvemuRecording.load(path: Fixtures.evemu("griffin-powermate")).description
        let uinput = try UinputDevice(description)
        let node = uinput.node
        let added = await collect(events, timeout: .seconds(15)) { items in
            items.contains { if case .added(let p, _) = $0 { p.node == node } else { false } }
        }
        let found = added.compactMap { if case .added(let p, let d) = $0, p.node == node { (p, d) } else { nil } }.first
        let (profile, device) = try #require(found, "watcher did not add \(node)")
        #expect(profile.kind == .dial && profile.isDedicated)
        #expect(profile.role(of: .relDial) == .slider && profile.role(of: .btn0) == .lightPress)
        let inputs = try device.inputs(on: loop)
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .relDial, -2)])
        let frames = await collect(inputs, timeout: .seconds(10)) { $0.count >= 1 }
        #expect(frames.first.map { if case .frame(let f) = $0 { shape(f.events) == ["REL_DIAL -2"] } else { false } } == true)
        uinput.destroy()
        let removed = await collect(events, timeout: .seconds(15)) { items in
            items.contains { if case .removed(let n) = $0 { n == node } else { false } }
        }
        #expect(removed.contains { if case .removed(let n) = $0 { n == node } else { false } })
    }

    @Test func kernelGroupFallbackSeesHotplug() async throws {
        // The "kernel" netlink group works with or without udevd (what the fallback uses).
        let loop = try IOLoop()
        defer { loop.stop() }
        let (monitor, stream) = try UdevInputMonitor.start(on: loop, source: .kernel)
        defer { monitor.stop() }
        let description = try EvemuRecording.load(path: Fixtures.evemu("rotary-encoder-rel-x")).description
        let device = try UinputDevice(description)
        let node = device.node
        let added = await collect(stream, timeout: .seconds(10)) { items in
            items.contains { if case .added(let d) = $0 { d.node == node } else { false } }
        }
        #expect(added.contains { if case .added(let d) = $0 { d.node == node && d.properties["DEVNAME"] != nil } else { false } })
        device.destroy()
        let removed = await collect(stream, timeout: .seconds(10)) { items in
            items.contains { if case .removed(let d) = $0 { d.node == node } else { false } }
        }
        #expect(removed.contains { if case .removed(let d) = $0 { d.node == node } else { false } })
    }

    /// Root ignores file modes, so the opening happens in a child process (this test bundle
    /// again, running only ``accessBackoffChild()``) that drops to `nobody` first.
    /// The same test function is the child: started again with the node in its environment,
    /// it takes the child's half (one test, never a skipped one).
    @Test func unreadableNodeIsOpenedOnceReadable() async throws {
        if let node = ProcessInfo.processInfo.environment["EVCAPTURE_TEST_ACCESS_NODE"] {
            try await accessBackoffChild(node: node)
            return
        }
        try #require(getuid() == 0, "needs root to chmod the node and start the child as nobody")
        let description = try EvemuRecording.load(path: Fixtures.evemu("gpio-keys-volume-keys")).description
        let uinput = try UinputDevice(description)
        defer { uinput.destroy() }
        // Let udevd apply its own mode first, so it cannot undo ours.
        try await waitForUdev([uinput.node])
        #expect(chmod(uinput.node, 0) == 0)
        // The child writes a byte to this pipe once it has been denied; one second later
        // this thread (not a test-pool thread: those may all be blocked waiting for child
        // processes) makes the node readable.
        var signal: [Int32] = [0, 0]
        try #require(pipe(&signal) == 0)
        _ = fcntl(signal[0], F_SETFD, FD_CLOEXEC)
        var env = ProcessInfo.processInfo.environment
        env["EVCAPTURE_TEST_ACCESS_NODE"] = uinput.node
        // The write end is the child's descriptor 3 (it gets no other of this process's).
        env["EVCAPTURE_TEST_ACCESS_SIGNAL_FD"] = "3"
        let started = ContinuousClock.now
        let node = uinput.node, readEnd = signal[0]
        let opened = Mutex<Int32?>(nil)
        Thread.detachNewThread {
            var byte: UInt8 = 0
            let n = read(readEnd, &byte, 1)
            close(readEnd)
            if n == 1 { usleep(1_000_000) }
            opened.withLock { $0 = chmod(node, 0o666) }
        }
        let child = try runThisTestAlone("unreadableNodeIsOpenedOnceReadable", environment: env, passing: [signal[1]])
        close(signal[1])
        #expect(opened.withLock { $0 } == 0)
        let text = child.stdout + child.stderr
        #expect(child.status == 0, "child output:\n\(text)")
        #expect(text.contains("opened after"), "child output:\n\(text)")
        #expect(ContinuousClock.now - started >= .seconds(1))
    }

    /// The child's half of ``unreadableNodeIsOpenedOnceReadable()``: as `nobody`, denied once,
    /// then opened with patience once the parent makes the node readable.
    private func accessBackoffChild(node: String) async throws {
        // glibc applies set*uid to every thread of the process.
        #expect(setgid(65534) == 0)
        #expect(setuid(65534) == 0)
        #expect(throws: EvdevError.self) { try EvdevDevice.open(node) }
        let fd = Int32(ProcessInfo.processInfo.environment["EVCAPTURE_TEST_ACCESS_SIGNAL_FD"] ?? "") ?? -1
        var byte: UInt8 = 1
        #expect(write(fd, &byte, 1) == 1, "signal pipe")
        let start = ContinuousClock.now
        let device = try await EvdevDevice.open(node, patience: .seconds(8))
        let waited = ContinuousClock.now - start
        print("opened after \(waited)")
        #expect(waited >= .milliseconds(500))
        #expect(device.description.name == "gpio-keys")
        device.close()
    }
}
