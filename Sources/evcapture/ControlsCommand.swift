import ArgumentParser
import Bridge

/// `evcapture controls [--camera DEV] [--json]`
struct ControlsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "controls",
        abstract: "List the camera's controls and which system control binds to which.")

    @Option(name: .long, help: "The camera: /dev/videoN or a /dev/v4l/by-id/… link (default: the first camera with zoom or exposure controls).")
    var camera: String?

    @Flag(name: .long, help: "One JSON object (event \"controls\") on stdout.")
    var json = false

    func run() throws {
        let selector: CameraSelector = camera.map { .path($0) } ?? .automatic
        let (report, error) = CameraControlsReport.make(selector)
        print(json ? report.jsonLine() : report.text)
        // No camera is a normal state unless the person named one.
        if error != nil, camera != nil { throw ExitCode.failure }
    }
}
