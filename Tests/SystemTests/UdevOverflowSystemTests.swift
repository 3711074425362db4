import Dispatch
import EvcaptureTesting
import Evdev
import Vocabulary
import Foundation
import LinuxIO
import Testing
import Udev

/// Holds the I/O loop's thread (a job on it that waits), so the monitor socket fills.
private actor LoopBlocker {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    init(_ loop: IOLoop) { unownedExecutor = loop.asUnownedSerialExecutor() }
    func block(entered: DispatchSemaphore, release: DispatchSemaphore) {
        entered.signal()
        release.wait()
    }
}

/// A burst of hotplug events that overflows the udev monitor's socket (ENOBUFS) on the real
/// kernel: the monitor enumerates again, so no device is missed and none that went is kept.
@Suite(.systemTest, .serialized)
struct UdevOverflowSystemTests {
    @Test func anOverflowedMonitorEnumeratesAgainAndMissesNoDevice() async throws {
        let description = try EvemuRecording.load(path: Fixtures.evemu("griffin-powermate")).description
        let loop = try IOLoop()
        defer { loop.stop() }
        // A 4 KiB buffer holds two or three udev messages: the burst below overflows it.
        let (monitor, stream) = try UdevInputMonitor.start(on: loop, receiveBufferSize: 4096)
        defer { monitor.stop() }
        _ = await collect(stream, timeout: .seconds(10)) { $0.contains { if case .enumerated = $0 { true } else { false } } }

        // The loop's thread is held: nothing reads the socket while 24 devices come and 8 go.
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let blocker = LoopBlocker(loop)
        Task { await blocker.block(entered: entered, release: release) }
        // (Polled with a sleep: waiting here would hold the one cooperative thread the task needs.)
        var held = false
        for _ in 0..<1000 where !held {
            held = entered.wait(timeout: .now()) == .success
            if !held { try await Task.sleep(for: .milliseconds(10)) }
        }
        try #require(held, "the loop's thread was not held")
        var devices = try (0..<24).map { _ in try UinputDevice(description) }
        let gone = devices.suffix(8).map(\.node)
        for d in devices.suffix(8) { d.destroy() }
        devices.removeLast(8)
        defer { for d in devices { d.destroy() } }
        let settle = try run("udevadm", "settle", "--timeout=30")
        #expect(settle.succeeded, "\(settle)")
        release.signal()

        let survivors = Set(devices.map(\.node))
        let events = await collect(stream, timeout: .seconds(20)) { items in
            survivors.isSubset(of: Set(items.compactMap { if case .added(let d) = $0 { d.node } else { nil } }))
        }
        var present = Set<String>()
        for e in events {
            switch e {
            case .added(let d): present.insert(d.node)
            case .removed(let d): present.remove(d.node)
            default: break
            }
        }
        #expect(monitor.overflowCount >= 1, "the socket did not overflow: the test proves nothing (\(events.count) events)")
        #expect(survivors.isSubset(of: present), "missed: \(survivors.subtracting(present).sorted())")
        #expect(present.isDisjoint(with: gone), "kept devices that went: \(present.intersection(gone).sorted())")
        print(
            "udev overflow: \(monitor.overflowCount) overflow(s), \(events.count) events, all \(survivors.count) present devices reported, none of the \(gone.count) gone"
        )
    }
}
