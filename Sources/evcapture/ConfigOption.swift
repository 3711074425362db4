import ArgumentParser
import ConfigFile
import LinuxIO
import Output

/// `--config FILE`, shared by the commands that read a config (`run`, `devices`, `replay`).
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "A config file (TOML); every setting is in docs/configuration.md.")
    var config: String?

    /// The config, or the defaults without `--config`. A bad file is `file:line: problem`
    /// on stderr and exit status 1: nothing half-starts.
    func load() throws -> Config {
        guard let config else { return Config() }
        do {
            return try Config.load(path: config)
        } catch {
            failing("\(error)")
        }
    }
}

/// Writes `message` (control characters escaped: it may quote a file) and a newline to
/// stderr, then exits with status 1.
func failing(_ message: String) -> Never {
    writeStderr(ReadableLines.escaped(message) + "\n")
    Evcapture.exit(withError: ExitCode.failure)
}

/// stdout for `print(…, to: &stderr)`-style use: everything goes through LinuxIO's ``writeStderr(_:)``.
struct StandardError: TextOutputStream {
    mutating func write(_ s: String) { writeStderr(s) }
}
