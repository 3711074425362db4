import ArgumentParser
import LinuxIO
#if canImport(Glibc)
import Glibc
import EvcaptureDaemon
import ConfigFile
#endif

/// `evcapture check-config FILE`: validates a config file, then says what it will do here.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a config file: every error names the file, line and problem.",
        discussion: """
            Errors exit with status 1. A config that parses is checked against this machine: \
            which present input devices each [devices.*] rule matches (a warning for none), \
            and whether the installed evcapture.service could write to [output] directory. \
            Warnings do not change the exit status.
            """)

    @Argument(help: "The config file (TOML).")
    var file: String

    func run() throws {
        let c: Config
        do {
            c = try Config.load(path: file)
        } catch {
            writeStderr("\(error)\n")
            throw ExitCode.failure
        }
        let inventory = c.deviceRules.isEmpty ? nil : DeviceInventory.take { d, node in c.overrides(for: d, node: node) }
        let (text, warnings) = ConfigCheck.report(config: c, file: file, inventory: inventory, sandbox: ServiceSandbox.installed())
        print(text, terminator: "")
        print(c.daemon.capture.videoFormat.report(c.daemon.capture.h264, stream: c.daemon.capture.stream))
        print("\(file): ok (\(c.deviceRules.count) device rule(s), \(c.daemon.hooks.count) hook(s), \(warnings) warning(s))")
    }
}
