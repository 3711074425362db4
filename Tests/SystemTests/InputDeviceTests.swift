#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing
import Synchronization
import Evdev
import Vocabulary
import LinuxIO
import Udev

/// Collects stream items until `done` says so or `timeout` passes; returns what came.
func collect<T: Sendable>(
    _ stream: AsyncStream<T>, timeout: Duration, until done: @escaping @Sendable ([T]) -> Bool
) async -> [T] {
    let box = InputCollected<T>()
    await withTaskGroup(of: Void.self) { group in
        group.addTask {
            for await item in stream {
                if box.items.withLock({
                    $0.append(item); return done($0)
                }) {
                    return
                }
            }
        }
        group.addTask { try? await Task.sleep(for: timeout) }
        await group.next()
        group.cancelAll()
    }
    return box.items.withLock { $0 }
}

private final class InputCollected<T: Sendable>: Sendable {
    let items = Mutex<[T]>([])
}

/// Waits until udevd has processed `nodes` (its database has ID_INPUT for them): `udevadm
/// settle` can return before udevd has read a new uevent. Returns the last listing. Without
/// udevd, returns at once.
@discardableResult
func waitForUdev(_ nodes: [String], timeout: Duration = .seconds(15)) async throws -> [UdevInputDevice] {
    guard UdevEventSource.automatic == .udev else { return try UdevInputMonitor.enumerateNow() }
    let deadline = ContinuousClock.now + timeout
    while true {
        let listed = try UdevInputMonitor.enumerateNow()
        let done = nodes.allSatisfy { n in listed.contains { $0.node == n && $0.properties["ID_INPUT"] == "1" } }
        if done || ContinuousClock.now >= deadline { return listed }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// ``waitForUdev(_:timeout:)`` for synchronous tests.
func waitForUdevBlocking(_ nodes: [String], timeout: Duration = .seconds(15)) throws {
    guard UdevEventSource.automatic == .udev else { return }
    _ = try pollUntil(timeout: timeout, every: .milliseconds(100)) {
        let listed = try UdevInputMonitor.enumerateNow()
        return nodes.allSatisfy { n in listed.contains { $0.node == n && $0.properties["ID_INPUT"] == "1" } }
    }
}

/// The (type, code, value) of events, without times: what a replay must reproduce.
func shape(_ events: [InputEvent]) -> [String] {
    events.map { "\($0.eventCode.name) \($0.value)" }
}

@Suite(.systemTest)
struct InputDeviceTests {
    /// The roles `evcapture devices --json` must show for each fixture device.
    static let expectedRoles: [String: [String: String]] = [
        "gpio-keys-volume-keys": ["KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary"],
        "thinkpad-extra-buttons-camera": ["KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary", "KEY_CAMERA": "primary"],
        "logitech-media-keyboard-elite-volume-wheel": ["KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary"],
        "huion-q620m-dial": ["BTN_0": "light-press", "REL_WHEEL": "slider", "REL_WHEEL_HI_RES": "slider"],
        "bluez-avrcp-headset": [
            "KEY_PLAYCD": "primary", "KEY_PAUSECD": "primary", "KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary",
        ],
        "rotary-encoder-rel-x": ["REL_X": "slider"],
        "rotary-encoder-push-switch-gpio-keys": ["KEY_ENTER": "light-press"],
        "griffin-powermate": ["BTN_0": "light-press", "REL_DIAL": "slider"],
        "usb-keyboard-typing-and-volume": ["KEY_VOLUMEDOWN": "primary", "KEY_VOLUMEUP": "secondary"],
    ]

    @Test func devicesJSONShowsTheRolesOfEveryFixtureDevice() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: DaemonPaths.evcapture),
            "build the executable first: swift build (\(DaemonPaths.evcapture))")
        var created: [(fixture: String, device: UinputDevice, description: DeviceDescription)] = []
        for name in Fixtures.recordedDevices {
            let description = try EvemuRecording.load(path: Fixtures.evemu(name)).description
            created.append((name, try UinputDevice(description), description))
        }
        let result = try runProgram(DaemonPaths.evcapture, ["devices", "--json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let array = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        for c in created {
            let entry = try #require(array.first { $0["node"] as? String == c.device.node }, "\(c.fixture) at \(c.device.node) not listed")
            #expect(entry["name"] as? String == c.description.name)
            #expect(entry["bus"] as? Int == Int(c.description.bus.rawValue))
            #expect(entry["vendor"] as? Int == Int(c.description.vendor))
            #expect(entry["product"] as? Int == Int(c.description.product))
            #expect(entry["roles"] as? [String: String] == Self.expectedRoles[c.fixture], "\(c.fixture)")
            let reasons = entry["reasons"] as? [String: String] ?? [:]
            #expect(Set(reasons.keys) == Set(Self.expectedRoles[c.fixture]!.keys), "\(c.fixture)")
            #expect(entry["dedicated"] as? Bool != nil && entry["headset"] as? Bool == (c.fixture == "bluez-avrcp-headset"))
        }
        for c in created { c.device.destroy() }
    }

    @Test func devicesCommandAppliesConfigOverridesAndPrintsText() throws {
        let description = try EvemuRecording.load(
            path: Fixtures.evemu("logitech-media-keyboard-elite-volume-wheel")
        ).description
        let knob = try UinputDevice(description)
        defer { knob.destroy() }
        let dir = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let path = "\(dir)/evcapture-devices-\(getpid()).toml"
        try "[devices.\"\(description.name)\"]\nkind = \"knob\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }

        let result = try runProgram(DaemonPaths.evcapture, ["devices", "--json", "--config", path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let array = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        let entry = try #require(array.first { $0["node"] as? String == knob.node })
        #expect(entry["roles"] as? [String: String] == ["KEY_VOLUMEUP": "slider", "KEY_VOLUMEDOWN": "slider", "KEY_MUTE": "light-press"])
        #expect(entry["steps"] as? [String: Int] == ["KEY_VOLUMEUP": 1, "KEY_VOLUMEDOWN": -1])
        #expect(entry["sources"] as? [String: String] == ["KEY_VOLUMEUP": "config", "KEY_VOLUMEDOWN": "config", "KEY_MUTE": "config"])
        #expect(entry["kind"] as? String == "knob" && entry["dedicated"] as? Bool == true)

        let text = try runProgram(DaemonPaths.evcapture, ["devices"])
        #expect(text.status == 0)
        let block = text.stdout.components(separatedBy: "\n").drop { !$0.hasPrefix(knob.node + " ") }.prefix(4)
        #expect(block.first?.contains("\"\(description.name)\"  bus usb 046d:030f  [buttons]") == true, "\(text.stdout)")
        #expect(block.contains { $0.contains("KEY_VOLUMEDOWN") && $0.contains("primary") && $0.contains("volume down key") })

        let bad = try runProgram(DaemonPaths.evcapture, ["devices", "--config", "\(dir)/no-such-evcapture.toml"])
        #expect(bad.status == 1 && bad.stderr.contains("no-such-evcapture.toml"))
    }

    @Test func devicesCommandExplainsWhenNothingIsReadable() throws {
        let setpriv = "/usr/bin/setpriv"
        try #require(access(setpriv, X_OK) == 0, "needs setpriv (util-linux) to run as nobody")
        // A device whose node nobody may read, whatever udev's rules say.
        let description = try EvemuRecording.load(path: Fixtures.evemu("griffin-powermate")).description
        let device = try UinputDevice(description)
        defer { device.destroy() }
        try waitForUdevBlocking([device.node])
        #expect(chmod(device.node, 0o600) == 0)
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", DaemonPaths.evcapture, "devices"]
        let text = try runProgram(setpriv, asNobody)
        #expect(text.status == 0, "stderr: \(text.stderr)")
        #expect(text.stdout.contains("No readable input devices"), "\(text.stdout)")
        #expect(text.stdout.contains("\(device.node): permission denied"), "\(text.stdout)")
        #expect(text.stdout.contains("udev-rules/70-evcapture.rules"))
        let json = try runProgram(setpriv, asNobody + ["--json"])
        #expect(json.status == 0)
        #expect((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [Any])?.isEmpty == true)
        #expect(json.stderr.contains("permission denied"))
    }

    @Test(arguments: Fixtures.recordedDevices)
    func playedEventsReadBackInFramesExactly(_ name: String) async throws {
        let recording = try EvemuRecording.load(path: Fixtures.evemu(name))
        // No kernel autorepeat: a slow guest could otherwise add value-2 events.
        let uinput = try UinputDevice(recording.description, autorepeat: false)
        defer { uinput.destroy() }
        let device = try EvdevDevice.open(uinput.node)
        #expect(device.description.name == recording.description.name)
        #expect(device.description.codes.subtracting(EvdevTests_repCodes) == recording.description.codes.subtracting(EvdevTests_repCodes))
        #expect(
            device.description.absInfo.mapValues {
                AbsInfo(minimum: $0.minimum, maximum: $0.maximum, fuzz: $0.fuzz, flat: $0.flat, resolution: $0.resolution)
            } == recording.description.absInfo)
        let loop = try IOLoop()
        defer { loop.stop() }
        let stream = try device.inputs(on: loop)
        let expected = Frame.split(recording.events)
        try uinput.write(recording.events)
        let items = await collect(stream, timeout: .seconds(10)) { $0.count >= expected.count }
        let frames = items.compactMap { if case .frame(let f) = $0 { f } else { nil } }
        #expect(frames.count == expected.count)
        #expect(frames.allSatisfy { $0.resync == nil })
        #expect(shape(frames.flatMap(\.events)) == shape(expected.flatMap(\.events)))
        // Kernel times are CLOCK_MONOTONIC: close to now, in order.
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowUS = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec / 1000)
        if let last = frames.last {
            #expect(abs(nowUS - last.time.microseconds) < 30_000_000)
        }
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.time <= $1.time })
        device.close()
    }

    @Test func overflowResyncsWithoutStuckKeys() throws {
        let description = try EvemuRecording.load(path: Fixtures.evemu("gpio-keys-volume-keys")).description
        let uinput = try UinputDevice(description)
        defer { uinput.destroy() }
        let device = try EvdevDevice.open(uinput.node)
        defer { device.close() }
        // Not reading: thousands of frames overflow the evdev client buffer (a few dozen
        // events for a small device), the kernel queues SYN_DROPPED.
        for _ in 0..<3000 {
            try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeUp, 1)])
            try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeUp, 0)])
        }
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeDown, 1)])
        var items: [DeviceInput] = []
        for _ in 0..<50 {
            let batch = device.readAvailable()
            items += batch
            if batch.isEmpty { break }
        }
        let frames = items.compactMap { if case .frame(let f) = $0 { f } else { nil } }
        #expect(!items.contains { if case .removed = $0 { true } else { false } })
        let resyncs = frames.filter { $0.resync != nil }
        #expect(!resyncs.isEmpty, "expected SYN_DROPPED after 6001 unread frames")
        #expect(frames.count < 6001, "frames were lost, not all delivered")
        // The state after reading matches the device: only VOLUMEDOWN down, as a fresh
        // open (EVIOCGKEY) says too.
        #expect(device.keysDown == [.volumeDown])
        let fresh = try EvdevDevice.open(uinput.node)
        #expect(fresh.keysDown == [.volumeDown])
        fresh.close()
        if let last = resyncs.last?.resync {
            #expect(last.keysDown.isSubset(of: [.volumeDown, .volumeUp]))
        }
        // Releasing it afterwards arrives as a normal frame and leaves nothing down.
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeDown, 0)])
        let after = device.readAvailable()
        #expect(after.contains { if case .frame(let f) = $0 { shape(f.events) == ["KEY_VOLUMEDOWN 0"] } else { false } })
        #expect(device.keysDown.isEmpty)
    }

    @Test func removalEndsTheStream() async throws {
        let description = try EvemuRecording.load(path: Fixtures.evemu("griffin-powermate")).description
        let uinput = try UinputDevice(description)
        let device = try EvdevDevice.open(uinput.node)
        let loop = try IOLoop()
        defer { loop.stop() }
        let stream = try device.inputs(on: loop)
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .relDial, 3)])
        let first = await collect(stream, timeout: .seconds(10)) { $0.count >= 1 }
        #expect(first.first.map { if case .frame(let f) = $0 { shape(f.events) == ["REL_DIAL 3"] } else { false } } == true)
        uinput.destroy()
        let rest = await collect(stream, timeout: .seconds(10)) { items in
            items.contains { if case .removed = $0 { true } else { false } }
        }
        #expect(rest.last == .removed(nil))
    }

    @Test func grabWaitsUntilNoKeyIsDown() throws {
        let description = try EvemuRecording.load(path: Fixtures.evemu("gpio-keys-volume-keys")).description
        let uinput = try UinputDevice(description)
        defer { uinput.destroy() }
        let device = try EvdevDevice.open(uinput.node)
        defer { device.close() }
        let other = try EvdevDevice.open(uinput.node)  // another reader, like the desktop
        defer { other.close() }
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeDown, 1)])
        _ = device.readAvailable()
        device.grabWhenIdle()
        #expect(!device.isGrabbed, "a key is down: the grab must wait")
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeDown, 0)])
        _ = device.readAvailable()
        #expect(device.isGrabbed)
        // While grabbed, the other reader sees nothing new.
        _ = other.readAvailable()
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeUp, 1)])
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeUp, 0)])
        #expect(other.readAvailable().isEmpty)
        #expect(device.readAvailable().count == 2)
        device.releaseGrab()
        #expect(!device.isGrabbed)
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeUp, 1)])
        #expect(other.readAvailable().count == 1)
    }
}

/// `EV_REP` codes: left out of uinput devices made with `autorepeat: false`.
let EvdevTests_repCodes: Set<EventCode> = [EventCode(.rep, 0), EventCode(.rep, 1)]
