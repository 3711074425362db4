import ArgumentParser
import Bridge
import Evdev

#if canImport(Glibc)
import Glibc
#endif

/// `evcapture replay FILE.evemu... [--config FILE] [--camera sim|DEV] [--json]`
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Feed evemu recordings through the capture pipeline on the recordings' own clock.",
        discussion: """
            Each file is one device (evemu-record output); its description decides its roles as \
            for a live device. All files' frames are merged by time. At the end, pending \
            deadlines fire and every device is removed (presses in flight are cancelled).
            """)

    @Argument(help: "evemu recordings, one device each.")
    var files: [String]

    @Option(name: .long, help: "A config file (TOML).")
    var config: String?

    @Option(name: .long, help: "A camera for slider inputs: `sim` (a simulated UVC-like camera) or a V4L2 device.")
    var camera: String?

    @Flag(name: .long, help: "JSON lines on stdout (one object per event).")
    var json = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one .evemu file") }
    }

    func run() throws {
        // Read and check every input before printing anything.
        let inputs: [ReplayInput]
        var settings = Config()
        do {
            if let config { settings = try Config.load(path: config) }
            inputs = try ReplayInput.load(paths: files)
        } catch let e as ConfigError {
            try fail(e.description)
        } catch let e as EvemuError {
            try fail(e.description)
        }
        var pipeline = ReplayPipeline(inputs: inputs, config: settings, controls: try ReplayControls.make(camera: camera))
        var out = ""
        pipeline.run { o in
            out += json ? o.json : o.text
            out += "\n"
            if out.utf8.count > 1 << 16 {
                print(out, terminator: "")
                out = ""
            }
        }
        print(out, terminator: "")
    }

    /// `file:line: problem` on stderr, exit status 1 (control characters quoted from the file escaped).
    private func fail(_ message: String) throws -> Never {
        var stderr = StandardError()
        print(ReadableLines.escaped(message), to: &stderr)
        throw ExitCode.failure
    }
}

/// Where `--camera` meets the controls core: returns the controls stage for the replay, or
/// nil when controls are not wired (the capture pipeline runs either way).
enum ReplayControls {
    static func make(camera: String?) throws -> (any ReplayControlsStage)? {
        switch camera {
        case nil: return nil
        case "sim": return CameraControlsStage()
        case let other?:
            throw ValidationError("--camera \(other): replay drives only the simulated camera for now; use --camera sim")
        }
    }
}

struct StandardError: TextOutputStream {
    mutating func write(_ s: String) {
        var s = s
        s.withUTF8 { b in _ = Glibc.write(2, b.baseAddress, b.count) }
    }
}
