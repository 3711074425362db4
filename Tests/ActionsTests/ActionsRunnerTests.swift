import EvcaptureTesting
import Foundation
import Synchronization
import Testing

/// Collects what the runner reports.
final class OutcomeLog: Sendable {
    private let items = Mutex<[ActionOutcome]>([])
    func add(_ o: ActionOutcome) { items.withLock { $0.append(o) } }
    var all: [ActionOutcome] { items.withLock { $0 } }
    var failures: [ActionError] { all.compactMap { if case .failed(let e, _) = $0 { e } else { nil } } }
    var hooksFinished: Int { all.count { if case .hookFinished = $0 { true } else { false } } }
    var sounds: [String] { all.compactMap { if case .soundStarted(let f, _) = $0 { f } else { nil } } }
}

@Suite struct ActionRunnerTests {
    /// Ten presses while the one hook allowed at a time cannot end (it waits for a file the
    /// test makes only after the ten): every `handle` returns (were one to wait for the hook,
    /// the time limit would end the test), the queue of 3 takes what it can hold, and each of
    /// the rest is a `queueFull`.
    @Test(.timeLimit(.minutes(1))) func handleNeverWaitsForASlowActionAndFullQueuesDropAndReport() async throws {
        let dir = try temporaryDirectory()
        let go = dir + "/go"
        let log = OutcomeLog()
        let slow = ExecHook(
            argv: ["/bin/sh", "-c", "while [ ! -e \"$0\" ]; do sleep 0.01; done", go], on: [.began], timeout: .seconds(30))
        let runner = ActionRunner(
            configuration: ActionsConfiguration(capture: nil, hooks: [slow], sound: .off, queueLimit: 3, maxConcurrentHooks: 1),
            frames: nil, logger: testLogger, onOutcome: log.add)
        for press in 1...10 { runner.handle(trigger(.began, press: PressID(rawValue: UInt64(press)))) }
        #expect(log.hooksFinished == 0)
        FileManager.default.createFile(atPath: go, contents: nil)
        #expect(await eventually(seconds: 20) { log.hooksFinished + log.failures.count == 10 })
        let dropped = log.failures.filter { if case .queueFull(kind: "hook", _) = $0 { true } else { false } }
        // The queue's 3, and as many as 2 taken out of it meanwhile: the hook running and the
        // one the worker holds while it waits for the hook's slot.
        #expect(log.hooksFinished >= 3 && log.hooksFinished <= 5, "\(log.all)")
        #expect(dropped.count == 10 - log.hooksFinished, "a queue of 3 (+1 running) cannot take 10: \(log.failures)")
        await runner.shutdown()
    }

    @Test func photoAndVideoWithoutACameraAreReportedErrors() async {
        let log = OutcomeLog()
        let runner = ActionRunner(
            configuration: ActionsConfiguration(capture: nil, sound: .off), frames: nil, logger: testLogger, onOutcome: log.add)
        runner.handle(trigger(.click, press: 1))
        runner.handle(trigger(.longPress, press: 2))
        runner.handle(trigger(.ended, press: 2))
        #expect(await eventually { log.failures.count == 2 })
        #expect(log.failures == [.noCamera, .noCamera])
        await runner.shutdown()
    }

    @Test func headsetPressesPlayTheShutterSoundOthersDoNot() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bin = try ShutterSoundTests().fakePlayers(["aplay"], in: dir)
        let played = "\(dir)/played"
        let player = SoundPlayer(searchPath: bin, environment: ["FAKE_PLAYER_LOG": played])
        let log = OutcomeLog()
        let runner = ActionRunner(
            configuration: ActionsConfiguration(capture: nil, sound: .builtIn(directory: dir), soundPlayer: player),
            frames: nil, logger: testLogger, onOutcome: log.add)
        var quiet = trigger(.click, press: 1)
        quiet.shouldPlaySound = false
        runner.handle(quiet)
        runner.handle(trigger(.click, press: 2))  // headset
        #expect(await eventually { log.sounds.count == 1 && FileManager.default.fileExists(atPath: played) })
        #expect(log.sounds == ["\(dir)/evcapture-shutter.wav"])
        #expect(await eventually { (try? String(contentsOfFile: played, encoding: .utf8)) == "aplay\n-q\n\(dir)/evcapture-shutter.wav\n" })
        await runner.shutdown()
        #expect(log.sounds.count == 1, "the non-headset click played nothing")
    }
}
import Vocabulary
@testable import Actions

@Suite struct CaptureEventTriggerTests {
    let device = CaptureDevice(name: "Sony (AVRCP)", node: "/dev/input/event9", bus: .bluetooth, isHeadset: true)

    @Test func gesturesComeBeforeTheirPhaseAndHeldOnlyGivesTheLongPress() {
        let click = CaptureEvent(
            phase: .ended, action: .primary, button: .playPause, device: device, press: PressID(rawValue: 4),
            time: Timestamp(microseconds: 5), began: Timestamp(microseconds: 2), shouldPlaySound: true, gesture: .click)
        let t = ActionTrigger.triggers(for: click)
        #expect(t.map(\.kind) == [.click, .ended])
        // The press's start is the event's own: each trigger carries it.
        #expect(t.map(\.pressTime) == [Timestamp(microseconds: 2), Timestamp(microseconds: 2)])
        #expect(t[0].button == "KEY_PLAYPAUSE" && t[0].deviceName == "Sony (AVRCP)" && t[0].press == 4)
        // Its time is the event's kernel time, on the events' clock.
        #expect(t[0].shouldPlaySound && t.map(\.time) == [Timestamp(microseconds: 5), Timestamp(microseconds: 5)])

        var held = click
        held.phase = .held
        held.gesture = .longPress
        #expect(ActionTrigger.triggers(for: held).map(\.kind) == [.longPress])

        var cancelled = click
        cancelled.phase = .cancelled
        cancelled.gesture = nil
        cancelled.reason = .deviceRemoved
        let c = ActionTrigger.triggers(for: cancelled)
        #expect(c.map(\.kind) == [.cancelled] && c[0].reason == "device-removed")
        #expect(c[0].environment["EVCAPTURE_REASON"] == "device-removed")
    }
}
