import ArgumentParser
import Vocabulary
#if canImport(Glibc)
import Glibc
import EvcaptureDaemon
import Camera
import Output
import ConfigFile
import LibcameraCamera
import Movie
#endif

/// `evcapture controls [--camera DEV] [--json]`
struct ControlsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "controls",
        abstract: "List the camera's controls and which system control binds to which.")

    @Option(
        name: .long, help: "The camera: /dev/videoN or a /dev/v4l/by-id/… link (default: the first camera with zoom or exposure controls).")
    var camera: String?

    @Flag(name: .long, help: "One JSON line (event \"controls\") on stdout.")
    var json = false

    func run() throws {
        let selector: CameraSelector = camera.map { .path($0) } ?? .automatic
        let (report, error) = CameraControlsReport.make(selector)
        if json {
            print(JSONLines.controlsReport(report, time: monotonicNow()))
        } else if error != nil, camera != nil {
            // A camera the person named and that cannot be used is an error, on stderr.
            var stderr = StandardError()
            print(report.text, to: &stderr)
        } else {
            print(report.text)
            print(LibcameraReport.text(Libcamera.start()))
            // The default video settings (`evcapture check-config FILE` says it for a config).
            print(VideoFormat.mp4.report(H264Settings()))
        }
        if error != nil, camera != nil { throw ExitCode.failure }
    }
}
