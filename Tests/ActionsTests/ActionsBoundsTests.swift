import EvcaptureTesting
import Foundation
import Synchronization
import Testing
@testable import Actions
import Vocabulary
@testable import Recording

/// Bounded everything (docs/behaviour.md#reliability): child output without newlines, sound players,
/// video commands.
@Suite struct ActionsBoundsTests {
    /// A hook that writes 32 MiB without a newline (a photo to stdout): lines handed on are
    /// at most 4096 bytes plus the note, the rest is dropped, and the next line is whole.
    @Test(.timeLimit(.minutes(1))) func outputWithoutNewlinesIsCutPerLine() throws {
        let child = try ChildProcess.spawn(
            argv: ["/bin/sh", "-c", "head -c 33554432 /dev/zero | tr '\\0' x; echo; echo after"], environment: [:],
            searchPath: "/usr/bin:/bin")
        let lines = Mutex<[String]>([])
        let outcome = child.wait(timeout: .seconds(30)) { line in lines.withLock { $0.append(line) } }
        #expect(outcome.succeeded, "\(outcome)")
        let got = lines.withLock { $0 }
        #expect(got.count == 2, "\(got.map(\.count))")
        let dropped = 33_554_432 - ChildProcess.maxLineBytes
        #expect(got.first == String(repeating: "x", count: ChildProcess.maxLineBytes) + "… (\(dropped) more bytes dropped)")
        #expect(got.last == "after")
        #expect(outcome.output.utf8.count <= 65536)
    }

    /// A child that writes without pause (`yes`) is still killed at its timeout: reading
    /// its output does not keep the waiter from looking at the clock.
    @Test(.timeLimit(.minutes(1))) func aChildThatNeverStopsWritingIsKilledOnTime() throws {
        let child = try ChildProcess.spawn(argv: ["yes"], environment: [:], searchPath: "/usr/bin:/bin")
        let start = ContinuousClock.now
        let count = Atomic<Int>(0)
        let outcome = child.wait(timeout: .milliseconds(500)) { _ in count.add(1, ordering: .relaxed) }
        #expect(outcome.timedOut)
        #expect(ContinuousClock.now - start < .seconds(10), "took \(ContinuousClock.now - start)")
        #expect(count.load(ordering: .relaxed) > 0)
    }

    /// Ten headset clicks while players take 2 s each: two play, the rest are skipped, and
    /// once those end a new sound plays again.
    @Test(.timeLimit(.minutes(1))) func soundPlayersAreCappedLikeHooks() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bin = "\(dir)/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let file = try AtomicFile(directory: bin, finalName: "aplay")
        try file.write(Array("#!/bin/sh\necho started >> \"$FAKE_PLAYER_LOG\"\nsleep 2\n".utf8))
        chmod(try file.commit(), 0o755)
        let log = "\(dir)/played"
        let player = SoundPlayer(searchPath: bin, environment: ["FAKE_PLAYER_LOG": log])
        #expect(player.maxConcurrent == 2)
        final class Counter: Sendable { let n = Atomic<Int>(0) }
        let ended = Counter()
        var started = 0
        for _ in 0..<10 where player.play("/x.wav", logger: testLogger, completion: { _ in ended.n.add(1, ordering: .relaxed) }) {
            started += 1
        }
        #expect(started == 2)
        #expect(await eventually(seconds: 20) { ended.n.load(ordering: .relaxed) == 2 })
        #expect(player.playing == 0)
        let again = player.play("/x.wav", logger: testLogger, completion: { _ in ended.n.add(1, ordering: .relaxed) })
        #expect(again)
        #expect(await eventually(seconds: 20) { ended.n.load(ordering: .relaxed) == 3 })
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
    }
}

extension ActionsBoundsTests {
    /// Clicks end presses that never recorded: their ends queue no video command, so the
    /// video queue holds only starts (at most `queueLimit`) and their stops.
    @Test func onlyPressesThatStartedAVideoQueueAStop() async {
        let log = OutcomeLog()
        let runner = ActionRunner(
            configuration: ActionsConfiguration(
                capture: nil, bindings: [.primary: ActionBinding(photoOn: nil, videoOnLongPress: true)], sound: .off),
            frames: nil, logger: testLogger, onOutcome: log.add)
        for press in 1...10_000 { runner.handle(trigger(.ended, press: PressID(rawValue: UInt64(press)))) }
        #expect(runner.videoCommandsQueued.load(ordering: .relaxed) == 0)
        for press in 20_001...20_003 {
            runner.handle(trigger(.longPress, press: PressID(rawValue: UInt64(press))))
            runner.handle(trigger(.ended, press: PressID(rawValue: UInt64(press))))
            runner.handle(trigger(.cancelled, press: PressID(rawValue: UInt64(press))))  // a second end: no second stop
        }
        #expect(runner.videoCommandsQueued.load(ordering: .relaxed) == 6)
        #expect(await eventually { log.failures.count == 3 }, "each start is answered (no camera)")
        await runner.shutdown()
    }
}

extension ActionsBoundsTests {
    /// A burst of trigger messages' `video-stop`s (the rig, docs/mqtt.md) while the video
    /// worker is busy: at most `queueLimit` of them wait, the rest are answered `queue-full`,
    /// and a local press's stop still finds room, so its recording cannot be left running
    /// (docs/behaviour.md#reliability).
    @Test(.timeLimit(.minutes(1))) func aBurstOfRemoteStopsCannotCrowdOutALocalStop() async {
        let log = OutcomeLog()
        let busy = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
        let runner = ActionRunner(
            configuration: ActionsConfiguration(
                capture: nil, bindings: [.primary: ActionBinding(photoOn: nil, videoOnLongPress: true)], sound: .off, queueLimit: 4),
            frames: nil, logger: testLogger,
            onOutcome: { outcome in
                log.add(outcome)
                // The first answer (the remote start's: no camera) holds the video worker.
                if !busy.exchange(true, ordering: .acquiringAndReleasing) {
                    while !release.load(ordering: .acquiring) { usleep(1000) }
                }
            })
        var remote = trigger(.click, press: .remote)
        remote.action = nil
        runner.perform(.videoStart, for: remote)
        #expect(await eventually { busy.load(ordering: .acquiring) })
        runner.handle(trigger(.longPress, press: 1))
        for _ in 0..<1000 { runner.perform(.videoStop, for: remote) }
        runner.handle(trigger(.ended, press: 1))
        #expect(runner.videoCommandsDropped.load(ordering: .relaxed) == 0)
        let queueFull = log.failures.count { if case .queueFull(kind: "video", _) = $0 { true } else { false } }
        #expect(queueFull == 1000 - 4, "\(queueFull) stops answered queue-full")
        release.store(true, ordering: .releasing)
        await runner.shutdown()
    }
}

extension ActionsBoundsTests {
    /// A flood of photo requests while the photo worker is busy (a script POSTing to the live
    /// view): each dropped one is answered `queue-full`, but the log gets "action queue full"
    /// at most once per 10 s, and the next line counts those left out
    /// (docs/behaviour.md#reliability). The throttle's clock is driven by hand.
    @Test(.timeLimit(.minutes(1))) func theQueueFullLineIsLoggedAtMostEveryTenSecondsWithTheCountLeftOut() async {
        let log = OutcomeLog()
        let recorded = RecordedLog()
        let now = Atomic<Int64>(1_000_000_000)
        let busy = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
        let runner = ActionRunner(
            configuration: ActionsConfiguration(
                capture: nil, bindings: [.primary: ActionBinding(photoOn: .click)], sound: .off, queueLimit: 4),
            logger: recorded.logger,
            onOutcome: { outcome in
                log.add(outcome)
                // The first answer (the first photo's: no camera) holds the photo worker.
                if !busy.exchange(true, ordering: .acquiringAndReleasing) {
                    while !release.load(ordering: .acquiring) { usleep(1000) }
                }
            },
            photoFrames: nil, logClock: { Timestamp(microseconds: now.load(ordering: .relaxed)) })
        var remote = trigger(.click, press: .remote)
        remote.action = nil
        runner.perform(.photo, for: remote)
        #expect(await eventually { busy.load(ordering: .acquiring) })
        func flood(_ n: Int) { for _ in 0..<n { runner.perform(.photo, for: remote) } }
        func queueFullLines() -> [String] { recorded.lines.filter { $0.contains("action queue full") } }
        func queueFullAnswers() -> Int { log.failures.count { if case .queueFull(kind: "photo", _) = $0 { true } else { false } } }

        // 4 wait, 996 are dropped: one line.
        flood(1000)
        #expect(queueFullAnswers() == 996)
        #expect(queueFullLines().count == 1, "\(queueFullLines().count) lines, the first: \(queueFullLines().prefix(2))")
        #expect(queueFullLines().first == "info: action queue full, request dropped action.kind=photo press=0")
        // 9.999999 s later: still that one line.
        now.add(9_999_999, ordering: .relaxed)
        flood(10)
        #expect(queueFullAnswers() == 1006)
        #expect(queueFullLines().count == 1, "\(queueFullLines().count) lines")
        // 10 s after the first line: the next drop is logged, with the 1,005 left out since.
        now.add(1, ordering: .relaxed)
        flood(1)
        let second = "info: action queue full, request dropped (and 1005 more since the last such line) action.kind=photo press=0"
        #expect(queueFullLines().last == second, "\(queueFullLines())")
        // And again nothing for the next 10 s; then a line with the count of those.
        flood(50)
        now.add(10_000_000, ordering: .relaxed)
        flood(1)
        #expect(queueFullLines().count == 3, "\(queueFullLines().count) lines")
        #expect(queueFullLines().last?.contains("(and 50 more since the last such line)") == true, "\(queueFullLines())")
        #expect(queueFullAnswers() == 1058)
        release.store(true, ordering: .releasing)
        await runner.shutdown()
    }
}
