import Vocabulary
import EvcaptureTesting
import Foundation
import Synchronization
import Testing
import V4L2
@testable import Camera

/// The writer thread's reads (docs/behaviour.md#camera-controls): the refresh after a change made elsewhere
/// (one per burst) and single values run there, after the values queued before them.
@Suite struct ControlWriterRefreshTests {
    /// What the writer's thread did, in order.
    final class Log: Sendable {
        let entries = Mutex<[String]>([])
        func add(_ s: String) { entries.withLock { $0.append(s) } }
        var all: [String] { entries.withLock { $0 } }
    }

    @Test func aRefreshRunsAfterTheValuesQueuedBeforeItAndBurstsAreOneRead() throws {
        let log = Log()
        let gate = Mutex(false)
        let entered = Mutex(false)
        let writer = ControlWriter(
            write: { id, v in
                entered.withLock { $0 = true }
                // The first write waits until the test has queued everything: a camera that hangs.
                while !gate.withLock({ $0 }) { usleep(1000) }
                log.add("set \(id.rawValue)=\(v)")
            },
            refresh: { log.add("refresh") })
        defer { writer.stop() }
        writer.submit(ControlID(1), 10)
        #expect(pollUntil(timeout: .seconds(2)) { entered.withLock { $0 } })  // the writer has taken 1=10 and waits in it
        writer.requestRefresh()
        writer.requestRefresh()
        writer.submit(ControlID(1), 11)
        writer.requestRefresh()
        gate.withLock { $0 = true }
        #expect(pollUntil(timeout: .seconds(2)) { log.all.count >= 3 })
        usleep(50_000)
        // 1=10 was being written; the three requests and 1=11 came meanwhile: 1=11 first,
        // then one refresh for all three.
        #expect(log.all == ["set 1=10", "set 1=11", "refresh"])
        writer.requestRefresh()
        #expect(pollUntil(timeout: .seconds(2)) { log.all.count == 4 })
        #expect(log.all.last == "refresh")
    }

    @Test func aReadComesAfterTheValuesQueuedBeforeItAndIsWaitedForABoundedTime() throws {
        let log = Log()
        let gate = Mutex(true)
        let writer = ControlWriter(
            write: { id, v in
                while !gate.withLock({ $0 }) { usleep(1000) }
                log.add("set \(id.rawValue)=\(v)")
            },
            read: { id in
                log.add("read \(id.rawValue)")
                return 42
            })
        defer { writer.stop() }
        writer.submit(ControlID(1), 10)
        #expect(writer.read(ControlID(1), timeout: .seconds(5)) == 42)
        #expect(log.all == ["set 1=10", "read 1"])
        // The writer held by a camera that does not answer: the read gives up on time.
        gate.withLock { $0 = false }
        writer.submit(ControlID(1), 11)
        let start = ContinuousClock.now
        #expect(writer.read(ControlID(1), timeout: .milliseconds(100)) == nil)
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(100) && waited < .seconds(2), "\(waited)")
        gate.withLock { $0 = true }
        #expect(pollUntil(timeout: .seconds(2)) { log.all.count == 4 })
        #expect(log.all == ["set 1=10", "read 1", "set 1=11", "read 1"])
    }

    @Test func aSnapshotAnswersFromItsListAndCannotBeSet() throws {
        let zoom = CameraControlInfo(id: .zoomAbsolute, name: "zoom_absolute", minimum: 100, maximum: 500, defaultValue: 100, value: 300)
        let snapshot = CameraSnapshot(identity: "cam", controls: [zoom])
        #expect(snapshot.controls() == [zoom])
        #expect(try snapshot.value(of: .zoomAbsolute) == 300)
        #expect(throws: CameraError.self) { try snapshot.value(of: .brightness) }
        #expect(throws: CameraError.self) { try snapshot.set(.zoomAbsolute, to: 200) }
        // The zoom slider of camera "cam" follows a snapshot of it.
        let live = SimCamera()
        let session = ControlsSession()
        _ = try session.addControl(try Control.systemZoomSlider(camera: live), at: Timestamp(microseconds: 0))
        let other = CameraSnapshot(identity: live.identity, controls: [zoom])
        let events = session.cameraChanged(other, at: Timestamp(microseconds: 1_000_000))
        #expect(events.contains { if case .value(let v) = $0 { v.raw == 300 } else { false } }, "\(events)")
        #expect(session.controls.first?.value == 3.0)  // 300 / 100: 3.0×
    }
}
