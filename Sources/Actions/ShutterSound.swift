#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import Synchronization
import Vocabulary
import LinuxIO
import Recording

/// The built-in shutter click: 80 ms of a decaying noise burst with a low thump,
/// 16-bit PCM mono at 22050 Hz, generated (no bundled resource).
public enum ShutterSound {
    static let sampleRate = 22050
    public static let duration = 0.08

    /// The WAV file's bytes. Deterministic (a fixed-seed noise generator).
    public static func wav() -> [UInt8] {
        let count = Int(Double(sampleRate) * duration)
        var samples = [Int16]()
        samples.reserveCapacity(count)
        var seed: UInt32 = 0x2545_F491
        for i in 0..<count {
            let t = Double(i) / Double(sampleRate)
            seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5  // xorshift32
            let noise = Double(Int32(bitPattern: seed)) / Double(Int32.max)
            let click = noise * exp(-t * 90)
            let thump = sin(2 * Double.pi * 160 * t) * exp(-t * 40)
            let value = (0.55 * click + 0.35 * thump) * 32767
            samples.append(Int16(clamping: Int(value.rounded())))
        }
        return wav(samples: samples, sampleRate: sampleRate)
    }

    /// A canonical 44-byte-header PCM WAV (mono, 16 bit).
    static func wav(samples: [Int16], sampleRate: Int) -> [UInt8] {
        var out = [UInt8]()
        let dataBytes = samples.count * 2
        out.fourCC("RIFF"); out.le32(36 + dataBytes); out.fourCC("WAVE")
        out.fourCC("fmt "); out.le32(16)
        out.le16(1)  // PCM
        out.le16(1)  // mono
        out.le32(sampleRate)
        out.le32(sampleRate * 2)  // bytes per second
        out.le16(2)  // block align
        out.le16(16)  // bits per sample
        out.fourCC("data"); out.le32(dataBytes)
        for s in samples { out.le16(Int(s)) }
        return out
    }

    /// Writes the built-in sound to `directory/evcapture-shutter.wav` unless an identical file
    /// is already there; returns its path.
    public static func file(in directory: String) throws(FileWriteError) -> String {
        let path = directory + "/evcapture-shutter.wav"
        let bytes = wav()
        if let existing = FileManager.default.contents(atPath: path), [UInt8](existing) == bytes { return path }
        let file = try AtomicFile(directory: directory, finalName: "evcapture-shutter.wav")
        try file.write(bytes)
        // Replace an older, different file: this name is ours.
        unlink(path)
        return try file.commit()
    }

    /// Where the generated file goes: `$RUNTIME_DIRECTORY` (systemd), `$XDG_RUNTIME_DIR`,
    /// `$TMPDIR`, else /tmp.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let d = environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first { return String(d) }
        if let d = environment["XDG_RUNTIME_DIR"], !d.isEmpty { return d }
        let tmp = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return tmp.count > 1 && tmp.hasSuffix("/") ? String(tmp.dropLast()) : tmp
    }
}

/// Plays a sound file through the first installed player, without waiting for it.
///
/// Bounded like hooks: at most `maxConcurrent` players run at once (copies of one player
/// share the count), each killed after 5 s and with its output cut per line; a sound asked
/// for while that many play is skipped (logged), not queued: a late click is worse than none.
public struct SoundPlayer: Sendable {
    /// Player programs in order of preference, with the arguments before the file.
    public var candidates: [(program: String, arguments: [String])]
    /// Where players are looked for; nil: the daemon's `PATH`.
    var searchPath: String?
    public var environment: [String: String]
    /// Players running at once, at most.
    var maxConcurrent: Int
    private let running = Running()

    private final class Running: Sendable {
        let count = Atomic<Int>(0)
    }

    /// Players running now.
    var playing: Int { running.count.load(ordering: .relaxed) }

    public static let defaultCandidates: [(program: String, arguments: [String])] = [
        ("pw-play", []), ("paplay", []), ("aplay", ["-q"]),
    ]

    public init(
        candidates: [(program: String, arguments: [String])] = SoundPlayer.defaultCandidates,
        searchPath: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
        maxConcurrent: Int = 2
    ) {
        self.candidates = candidates
        self.searchPath = searchPath
        self.environment = environment
        self.maxConcurrent = max(1, maxConcurrent)
    }

    /// The first player found, as a full path with its arguments.
    func findPlayer() -> (path: String, arguments: [String])? {
        let path = searchPath ?? environment["PATH"] ?? "/usr/bin:/bin"
        for c in candidates {
            if let found = ChildProcess.resolve(c.program, searchPath: path) { return (found, c.arguments) }
        }
        return nil
    }

    /// Starts playing `file`; returns at once. Returns false (and does nothing) when no
    /// player is installed or `maxConcurrent` are playing. A player still running after 5 s
    /// is killed. `completion` runs (on the player's thread) when it has ended.
    @discardableResult
    public func play(
        _ file: String, logger: Logger, completion: (@Sendable (ChildOutcome) -> Void)? = nil
    ) -> Bool {
        guard let player = findPlayer() else { return false }
        let running = self.running
        let limit = maxConcurrent
        guard running.count.add(1, ordering: .relaxed).newValue <= limit else {
            running.count.subtract(1, ordering: .relaxed)
            logger.info("sound skipped: \(limit) players still running", metadata: ["sound.player": "\(player.path)"])
            return false
        }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(argv: [player.path] + player.arguments + [file], environment: environment, searchPath: nil)
        } catch {
            running.count.subtract(1, ordering: .relaxed)
            logger.info("sound player failed to start", metadata: ["error": "\(error)"])
            return false
        }
        startThread(name: "evcapture-sound") {
            let outcome = child.wait(timeout: .seconds(5)) { line in logger.debug("\(line)", metadata: ["sound.player": "\(player.path)"]) }
            running.count.subtract(1, ordering: .relaxed)
            if !outcome.succeeded {
                logger.info("sound player failed", metadata: ["sound.player": "\(player.path)", "result": "\(outcome)"])
            }
            completion?(outcome)
        }
        return true
    }
}
