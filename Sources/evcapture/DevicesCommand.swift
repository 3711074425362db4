import ArgumentParser
import LinuxIO
#if canImport(Glibc)
import Glibc
import EvcaptureDaemon
import Camera
import Output
import ConfigFile
#endif

/// `evcapture devices [--config FILE] [--json]`: every input device with its roles and why.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List input devices with the role of each key and axis, and why.")

    @OptionGroup var config: ConfigOption

    @Flag(name: .long, help: "Print a JSON array (node, name, bus, vendor, product, roles, reasons, dedicated, headset).")
    var json = false

    func run() throws {
        let settings = try config.load()
        let inventory = DeviceInventory.take { description, node in settings.overrides(for: description, node: node) }
        if json {
            print(inventory.json())
            // stdout stays valid JSON; why nothing is listed goes to stderr.
            if inventory.devices.isEmpty { writeStderr(inventory.noDevicesExplanation()) }
        } else {
            print(inventory.text(), terminator: "")
            if let file = config.config, !settings.deviceRules.isEmpty {
                var warnings = 0
                print("\nRules of \(file):")
                print(ConfigCheck.rulesText(config: settings, file: file, inventory: inventory, warnings: &warnings), terminator: "")
            }
        }
        // The config's own warnings (a rule without match keys, ...), on stderr for --json too.
        for w in settings.warnings { writeStderr(ReadableLines.escaped(w.description) + "\n") }
    }

}
