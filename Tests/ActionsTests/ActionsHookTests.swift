import EvcaptureTesting
import Foundation
import Logging
import Synchronization
import Testing
@testable import Actions
import Vocabulary
import LinuxIO
@testable import Recording

func trigger(_ kind: ActionTrigger.Kind = .click, device: String = "AB Shutter3", press: PressID = 7) -> ActionTrigger {
    ActionTrigger(
        kind: kind, action: .primary, button: "KEY_VOLUMEUP", deviceName: device, deviceNode: "/dev/input/event5",
        press: press, time: Timestamp(wallSeconds: 1_763_765_999.25), reason: kind == .cancelled ? "device removed" : nil,
        file: kind == .photo ? "/srv/photos/a b.jpg" : nil, shouldPlaySound: true)
}

func parseEnv(_ output: String) -> [String: String] {
    var env: [String: String] = [:]
    for line in output.split(separator: "\n") {
        guard let eq = line.firstIndex(of: "=") else { continue }
        env[String(line[..<eq])] = String(line[line.index(after: eq)...])
    }
    return env
}

@Suite struct ExecHookTests {
    @Test func eventFactsArriveInTheEnvironment() async throws {
        let hook = ExecHook(argv: ["env"], on: [.click])
        let outcome = try await hook.run(for: trigger(.click), baseEnvironment: ["PATH": "/usr/bin:/bin"], logger: testLogger).get()
        let env = parseEnv(outcome.output)
        #expect(env["EVCAPTURE_EVENT"] == "click")
        #expect(env["EVCAPTURE_PHASE"] == "ended")
        #expect(env["EVCAPTURE_GESTURE"] == "click")
        #expect(env["EVCAPTURE_ACTION"] == "primary")
        #expect(env["EVCAPTURE_BUTTON"] == "KEY_VOLUMEUP")
        #expect(env["EVCAPTURE_DEVICE"] == "AB Shutter3")
        #expect(env["EVCAPTURE_DEVICE_NODE"] == "/dev/input/event5")
        #expect(env["EVCAPTURE_PRESS"] == "7")
        // The trigger's monotonic time on the wall clock, made once, here at the hook.
        let time = try #require(env["EVCAPTURE_TIME"].flatMap(Double.init))
        #expect(abs(time - 1_763_765_999.25) < 0.001, "\(env)")
        #expect(env["EVCAPTURE_TIME"]?.split(separator: ".").last?.count == 6)
        #expect(env["EVCAPTURE_REASON"] == nil)
        #expect(env["PATH"] == "/usr/bin:/bin", "the base environment is kept")

        let cancelled = parseEnv(try await hook.run(for: trigger(.cancelled), logger: testLogger).get().output)
        #expect(cancelled["EVCAPTURE_PHASE"] == "cancelled" && cancelled["EVCAPTURE_REASON"] == "device removed")
        #expect(cancelled["EVCAPTURE_GESTURE"] == nil)
        let photo = parseEnv(try await hook.run(for: trigger(.photo), logger: testLogger).get().output)
        #expect(photo["EVCAPTURE_FILE"] == "/srv/photos/a b.jpg" && photo["EVCAPTURE_PHASE"] == nil)
    }

    @Test func shellMetacharactersAreNeverInterpreted() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let evil = "$(touch \(dir)/pwned); touch \(dir)/pwned2 ; | & `touch \(dir)/pwned3` \"' *"
        // The device name goes through the environment and, here, through argv as well.
        let hook = ExecHook(argv: ["printf", "%s|%s\\n", "arg:\(evil)", "$EVCAPTURE_DEVICE"], on: [.began])
        let outcome = try await hook.run(for: trigger(.began, device: evil), logger: testLogger).get()
        #expect(outcome.output == "arg:\(evil)|$EVCAPTURE_DEVICE\n")
        let env = parseEnv(
            try await ExecHook(argv: ["env"], on: [.began]).run(for: trigger(.began, device: evil), logger: testLogger).get().output)
        #expect(env["EVCAPTURE_DEVICE"] == evil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing was executed")
    }

    /// No wall-clock bound (the awaiting test resumes on Swift's cooperative pool, which
    /// tests blocking their threads in parallel can hold for as long as a minute on a loaded
    /// machine): the hook would sleep 60 s and then exit 0; it is reported as killed for its
    /// timeout, which only the kill can make it, and its whole process group dies with it.
    @Test func aHookPastItsTimeoutIsKilled() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sleeperFile = "\(dir)/sleeper"
        // The shell's child (sleep) is in the hook's process group and must die with it.
        let hook = ExecHook(
            argv: ["/bin/sh", "-c", "sleep 60 & echo $! > \"$0\"; wait $!; echo never", sleeperFile], on: [.click],
            timeout: .seconds(3))  // time for the shell to start its sleep first, however loaded the machine
        let result = await hook.run(for: trigger(), logger: testLogger)
        // Not killed, the shell would have waited for its sleep and exited 0.
        #expect(result == .failure(.hook(name: "/bin/sh", problem: "killed after its timeout")))
        let sleeper = try #require(
            Int32(try String(contentsOfFile: sleeperFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Gone or a zombie (reparented, maybe not reaped yet): either way it no longer runs.
        let ended = await eventually(seconds: 10) {
            guard let stat = try? String(contentsOfFile: "/proc/\(sleeper)/stat", encoding: .utf8) else { return true }
            return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
        }
        #expect(ended, "the hook's grandchild \(sleeper) (sleep 60) outlived the kill")
    }

    /// The same kill seen at the process level: the timeout is reported and the child ended
    /// by SIGTERM (sh does not catch it), not by exiting.
    /// A descriptor the daemon holds without close-on-exec (libmosquitto's broker socket is
    /// one) does not reach a hook: docs/behaviour.md#hooks.
    @Test func aChildGetsNoDescriptorButItsStandardOnes() throws {
        let held = open("/dev/null", O_RDONLY)  // not close-on-exec
        #expect(held >= 0)
        let number: Int32 = 321
        #expect(dup2(held, number) == number)
        close(held)
        defer { close(number) }
        let script = "if [ -e /proc/$$/fd/\(number) ]; then echo held; else echo closed; fi; [ -e /proc/$$/fd/2 ] && echo stderr"
        let child = try ChildProcess.spawn(argv: ["/bin/sh", "-c", script], environment: [:], searchPath: nil)
        let lines = Mutex<[String]>([])
        let outcome = child.wait(timeout: .seconds(10)) { line in lines.withLock { $0.append(line) } }
        #expect(outcome.succeeded, "\(outcome)")
        #expect(lines.withLock { $0 } == ["closed", "stderr"])
    }

    @Test func aChildPastItsTimeoutEndsBySIGTERM() throws {
        let child = try ChildProcess.spawn(argv: ["/bin/sh", "-c", "sleep 60"], environment: [:], searchPath: nil)
        let start = ContinuousClock.now
        let outcome = child.wait(timeout: .milliseconds(400)) { _ in }
        #expect(outcome.timedOut)
        #expect(outcome.signal == SIGTERM, "\(outcome)")
        #expect(outcome.exitStatus == nil)
        #expect(!outcome.succeeded)
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    @Test func failuresAreReported() async {
        let missing = await ExecHook(argv: ["evcapture-no-such-program"], on: [.click]).run(for: trigger(), logger: testLogger)
        #expect(missing == .failure(.hook(name: "evcapture-no-such-program", problem: "not found or not executable")))
        let exit3 = await ExecHook(argv: ["/bin/sh", "-c", "exit 3"], on: [.click]).run(for: trigger(), logger: testLogger)
        #expect(exit3 == .failure(.hook(name: "/bin/sh", problem: "exited with status 3")))
    }

    @Test func matching() {
        let hook = ExecHook(argv: ["true"], on: [.click, .photo], actions: [.secondary])
        #expect(!hook.matches(trigger(.click)), "primary is not selected")
        var t = trigger(.photo)
        t.action = .secondary
        #expect(hook.matches(t))
        t.kind = .began
        #expect(!hook.matches(t))
    }
}

extension Result where Success == ChildOutcome, Failure == ActionError {
    static func == (a: Self, b: Self) -> Bool {
        switch (a, b) {
        case (.failure(let x), .failure(let y)): x == y
        case (.success(let x), .success(let y)): x == y
        default: false
        }
    }
}

@Suite struct ShutterSoundTests {
    @Test func generatedWAVIsShortMonoPCM() {
        let wav = ShutterSound.wav()
        #expect(fourCC(wav, 0) == "RIFF" && fourCC(wav, 8) == "WAVE" && fourCC(wav, 12) == "fmt ")
        #expect(le32(wav, 4) == wav.count - 8)
        #expect(wav[20] == 1 && wav[22] == 1, "PCM, mono")
        #expect(le32(wav, 24) == 22050)
        #expect(wav[34] == 16, "16 bit")
        #expect(fourCC(wav, 36) == "data" && le32(wav, 40) == 1764 * 2, "80 ms at 22050 Hz")
        let samples = stride(from: 44, to: wav.count, by: 2).map { Int16(bitPattern: UInt16(wav[$0]) | UInt16(wav[$0 + 1]) << 8) }
        let early = samples.prefix(200).map { abs(Int($0)) }.max() ?? 0
        let late = samples.suffix(200).map { abs(Int($0)) }.max() ?? 0
        #expect(early > 8000 && late < early / 4, "a click that decays (\(early) → \(late))")
    }

    @Test func fileIsWrittenOnce() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try ShutterSound.file(in: dir)
        let first = try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int
        #expect(try ShutterSound.file(in: dir) == path)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int == first, "not rewritten")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["evcapture-shutter.wav"])
    }

    func fakePlayers(_ names: [String], in dir: String) throws -> String {
        let bin = "\(dir)/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for name in names {
            let script = "#!/bin/sh\nprintf '%s\\n' \"\(name)\" \"$@\" > \"$FAKE_PLAYER_LOG\"\n"
            // Written with O_CLOEXEC (AtomicFile): a descriptor open for writing that leaks into a
            // child spawned by a parallel test would make exec fail with ETXTBSY.
            let file = try AtomicFile(directory: bin, finalName: name)
            try file.write(Array(script.utf8))
            chmod(try file.commit(), 0o755)
        }
        return bin
    }

    func play(_ player: SoundPlayer, _ file: String) async -> (Bool, ChildOutcome?) {
        let done = OneShot<ChildOutcome?>()
        let started = player.play(file, logger: testLogger) { done.fulfil($0) }
        if !started { return (false, nil) }
        return (true, await done.value())
    }

    @Test func theFirstInstalledPlayerGetsTheWAV() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bin = try fakePlayers(["aplay"], in: dir)
        let log = "\(dir)/played"
        let wav = try ShutterSound.file(in: dir)
        let player = SoundPlayer(environment: ["PATH": "\(bin):/usr/bin:/bin", "FAKE_PLAYER_LOG": log])
        let (started, outcome) = await play(player, wav)
        #expect(started && outcome?.succeeded == true)
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "aplay\n-q\n\(wav)\n")
    }

    @Test func preferenceOrderAndNoPlayer() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bin = try fakePlayers(["aplay", "paplay"], in: dir)
        let player = SoundPlayer(searchPath: bin, environment: ["FAKE_PLAYER_LOG": "\(dir)/played"])
        #expect(player.findPlayer()?.path == "\(bin)/paplay")
        _ = await play(player, "/x.wav")
        #expect(try String(contentsOfFile: "\(dir)/played", encoding: .utf8) == "paplay\n/x.wav\n")

        let none = SoundPlayer(searchPath: "\(dir)/empty", environment: [:])
        #expect(none.findPlayer() == nil)
        let (started, _) = await play(none, "/x.wav")
        #expect(!started, "skipped silently when no player is installed")
    }
}
