import ArgumentParser
import Vocabulary
import Capture

#if canImport(Glibc)
import Glibc
import EvcaptureDaemon
import Camera
import Actions
import Output
import ConfigFile
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

    @OptionGroup var config: ConfigOption

    @Option(name: .long, help: "A camera for slider inputs: `sim` (a simulated UVC-like camera) or a V4L2 device.")
    var camera: String?

    @Flag(name: .long, help: "JSON lines on stdout (one object per event).")
    var json = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one .evemu file") }
    }

    func run() throws {
        // Read and check every input before printing anything.
        let settings = try config.load()
        let inputs: [ReplayInput]
        do {
            inputs = try ReplayInput.load(paths: files)
        } catch {
            failing(error.description)
        }
        var pipeline = ReplayPipeline(
            inputs: inputs, config: settings, controls: try ReplayControls.make(camera: camera, config: settings))
        // The daemon's actions for the same events: reported, not run (a replay is for
        // reports and tests; it takes no photos and runs no hooks).
        let actions = ActionsConfiguration(capture: nil, bindings: settings.daemon.bindings, hooks: settings.daemon.hooks, sound: .off)
        var out = ""
        pipeline.run { event in
            out += json ? JSONLines.line(event) : ReadableLines.line(event)
            out += "\n"
            if case .capture(let capture) = event {
                for trigger in ActionTrigger.triggers(for: capture) {
                    for action in actions.planned(for: trigger) {
                        let skipped = ActionOutcome.skipped(action, press: trigger.press, reason: "replay runs no actions")
                        out +=
                            (json ? JSONLines.outcome(skipped, time: capture.time) : ReadableLines.outcome(skipped, time: capture.time))
                            + "\n"
                    }
                }
            }
            if out.utf8.count > 1 << 16 {
                print(out, terminator: "")
                out = ""
            }
        }
        print(out, terminator: "")
    }

}

/// Where `--camera` meets the controls core: returns the controls stage for the replay, or
/// nil when controls are not wired (the capture pipeline runs either way).
enum ReplayControls {
    static func make(camera: String?, config: Config) throws -> (any ControlsStage)? {
        let backend: any CameraBackend
        switch camera {
        case nil: return nil
        case "sim": backend = SimCamera()
        case let path?:
            // A real camera's controls, driven as the daemon drives them.
            do {
                backend = try V4L2Camera.open(.path(path))
            } catch {
                throw ValidationError("--camera \(path): \(error)")
            }
        }
        return CameraControlsStage(
            camera: backend, configuration: config.daemon.controlsConfiguration, controls: config.daemon.controls)
    }
}
