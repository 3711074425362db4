import ArgumentParser
import EvcaptureDaemon
import Camera
import Output
import ConfigFile

/// The command line; started by ``Main``.
struct Evcapture: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evcapture",
        abstract: "Turn buttons and knobs into camera capture events and camera control changes.",
        version: "0.1.0",
        subcommands: [
            RunCommand.self, DevicesCommand.self, ControlsCommand.self, ReplayCommand.self, MonitorCommand.self, CheckConfigCommand.self,
        ])

    /// ArgumentParser's `main`, after turning transparent huge pages off while this is still
    /// the only thread (see `disableTransparentHugePages`).
    static func main() async {
        disableTransparentHugePages()
        await main(nil)
    }
}
