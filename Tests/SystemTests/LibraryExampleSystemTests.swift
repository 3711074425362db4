import EvcaptureTesting
import Foundation
import Testing

/// The library example of docs/library.md (Examples/CaptureApp, built with the package) on the real
/// kernel: its handlers get a uinput device's presses, in order, and the secondary button
/// ends it with the session stopped.
@Suite(.systemTest, .serialized)
struct LibraryExampleSystemTests {
    static let example = DaemonPaths.product("capture-app-example")

    @Test func theExampleAppGetsPressesThroughItsHandlers() throws {
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let app = try DaemonProcess("library-example", executable: Self.example, arguments: [], environment: [:])
        defer { _ = app.terminate() }
        // (Its stdout is a pipe, so print's lines come at exit; the log on stderr says when it reads devices.)
        #expect(pollUntil(timeout: .seconds(30)) { app.stderr.contains("ready:") }, "\(app.transcript)")
        try keys.click(.volumeDown)
        Thread.sleep(forTimeInterval: 0.3)
        try keys.click(.volumeUp)  // the secondary button: the app stops
        let status = app.waitForExit(timeout: .seconds(30))
        #expect(status == 0, "\(app.transcript)")
        let lines = app.stdout.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("device") }
        #expect(
            lines == [
                "primary began KEY_VOLUMEDOWN press 1", "primary ended KEY_VOLUMEDOWN press 1",
                "secondary began KEY_VOLUMEUP press 2", "secondary ended KEY_VOLUMEUP press 2", "stopped",
            ], "\(app.transcript)")
    }
}
