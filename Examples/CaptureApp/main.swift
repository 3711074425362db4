// The library example of docs/library.md: every button's capture events to the app's handlers, the
// knobs driving the camera's controls, and the whole event stream; the secondary button
// (volume up) ends it.
import Capture
import Runtime
import EvcaptureDaemon

let interaction = CaptureEventInteraction(
    primary: { event in print("primary \(event.phase.rawValue) \(event.button.name) press \(event.press)") },
    secondary: { event in print("secondary \(event.phase.rawValue) \(event.button.name) press \(event.press)") })
let session = CaptureSession(interaction: interaction, camera: nil)  // or .automatic: knobs drive its zoom
session.start()
for await event in session.events {
    if case .device(let change) = event { print("device \(change.kind.rawValue) \(change.device.node)") }
    if case .capture(let capture) = event, capture.action == .secondary, capture.phase == .ended { break }
}
await session.stop()
print("stopped")
