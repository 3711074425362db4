import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Bridge

/// `evcapture devices [--json]`: every input device with its roles and why.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List input devices with the role of each key and axis, and why.")

    @Flag(name: .long, help: "Print a JSON array (node, name, bus, vendor, product, roles, reasons, dedicated, headset).")
    var json = false

    func run() throws {
        let inventory = DeviceInventory.take()
        if json {
            print(inventory.json())
            if inventory.devices.isEmpty {
                // stdout stays valid JSON; the explanation goes to stderr.
                let text = inventory.noDevicesExplanation()
                _ = text.withCString { write(2, $0, strlen($0)) }
            }
        } else {
            print(inventory.text(), terminator: "")
        }
    }
}
