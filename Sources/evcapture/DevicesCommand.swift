import ArgumentParser
#if canImport(Glibc)
import Glibc
import EvcaptureDaemon
import Camera
import Actions
import Output
import ConfigFile
#endif

/// `evcapture devices [--config FILE] [--json]`: every input device with its roles and why.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List input devices with the role of each key and axis, and why.")

    @Option(name: .long, help: "A config file (TOML) whose [devices] overrides apply.")
    var config: String?

    @Flag(name: .long, help: "Print a JSON array (node, name, bus, vendor, product, roles, reasons, dedicated, headset).")
    var json = false

    func run() throws {
        var settings = Config()
        if let config {
            do {
                settings = try Config.load(path: config)
            } catch {
                printError("evcapture: \(error)\n")
                throw ExitCode.failure
            }
        }
        let inventory = DeviceInventory.take { description, node in settings.overrides(for: description, node: node) }
        if json {
            print(inventory.json())
            // stdout stays valid JSON; why nothing is listed goes to stderr.
            if inventory.devices.isEmpty { printError(inventory.noDevicesExplanation()) }
        } else {
            print(inventory.text(), terminator: "")
        }
    }

    private func printError(_ text: String) {
        _ = text.withCString { write(2, $0, strlen($0)) }
    }
}
