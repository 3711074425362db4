import EvcaptureTesting
import Capture
import Foundation
import Testing
@testable import Camera

private func changes(_ events: [ControlsEvent]) -> [ControlValueChange] {
    events.compactMap { if case .value(let v) = $0 { v } else { nil } }
}

/// The simulated UVC camera and the system sliders bound to it.
@Suite struct SimCameraTests {
    @Test func looksLikeAUVCWebcam() throws {
        let cam = SimCamera()
        let list = try cam.controls()
        #expect(list.map(\.name) == ["zoom_absolute", "auto_exposure", "exposure_time_absolute"])
        let zoom = try #require(list.first { $0.id == .zoomAbsolute })
        #expect((zoom.minimum, zoom.maximum, zoom.step, zoom.value) == (100, 500, 1, 100))
        let exposure = try #require(list.first { $0.id == .exposureAbsolute })
        #expect((exposure.minimum, exposure.maximum, exposure.value, exposure.isInactive) == (3, 2047, 250, true))
        #expect(try cam.value(of: .exposureAuto) == 0)
        #expect(cam.identity == "sim")
    }

    @Test func clampsRoundsAndRefusesLikeUvcvideo() throws {
        let cam = SimCamera()
        #expect(try cam.set(.zoomAbsolute, to: 9000) == 500)
        #expect(try cam.set(.zoomAbsolute, to: -3) == 100)
        #expect(try cam.set(.exposureAbsolute, to: 1) == 3)
        #expect(try cam.set(.exposureAuto, to: 1) == 1)
        #expect(try cam.controls().first { $0.id == .exposureAbsolute }?.isInactive == false)
        #expect(throws: CameraError.self) { try cam.set(.exposureAuto, to: 3) }  // not in the menu
        #expect(throws: CameraError.self) { try cam.set(.brightness, to: 1) }  // no such control
        do {
            try cam.set(.exposureAuto, to: 7)
        } catch {
            #expect(error.code == .outOfRange)
            #expect(error.description.contains("auto_exposure"))
        }
        // Rounding to a coarser step, from the minimum.
        cam.changeRange(.zoomAbsolute, minimum: 100, maximum: 500)
        #expect(SimCameraStepCheck.rounded(107, min: 100, max: 500, step: 5) == 105)
        #expect(SimCameraStepCheck.rounded(108, min: 100, max: 500, step: 5) == 110)
        #expect(SimCameraStepCheck.rounded(499, min: 100, max: 498, step: 4) == 496)
    }

    @Test func emulatedExposureBiasSwitchesToManualAndBack() throws {
        let cam = SimCamera()
        let s = ControlsSession(rememberedControl: "exposure-bias")
        _ = s.addDefaultControls(camera: cam, at: at(0))
        #expect(s.currentControl?.name == "exposure-bias")
        // +3 detents = +1 EV: manual mode, exposure = 250 × 2.
        let up = changes(s.handle(.slide(3), at: at(1)))
        #expect(up.map(\.value) == [1])
        #expect(up.map(\.raw) == [500])
        #expect(try cam.value(of: .exposureAuto) == 1)
        // +1/3 EV more: 250 × 2^(4/3) = 629.96 → 630.
        #expect(changes(s.handle(.slide(1), at: at(1.1))).map(\.raw) == [630])
        // Back to 0: the base exposure, then auto again.
        #expect(changes(s.handle(.slide(-4), at: at(1.2))).map(\.raw) == [250])
        #expect(try cam.value(of: .exposureAuto) == 0)
        #expect(
            cam.setLog.map { "\($0.id == .exposureAuto ? "auto" : "time")=\($0.value)" } == [
                "auto=1", "time=500", "time=630", "time=250", "auto=0",
            ])
        // The base is the exposure when the bias leaves 0; the camera clamps large results.
        cam.changeExternally(.exposureAbsolute, to: 1500)
        #expect(changes(s.handle(.slide(6), at: at(2))).map(\.raw) == [2047])
        #expect(changes(s.handle(.slide(-12), at: at(2.1))).map(\.raw) == [375])  // 1500 / 4
        // Another program puts the camera back on auto: the bias follows to 0.
        cam.changeExternally(.exposureAuto, to: 0)
        #expect(changes(s.cameraChanged(cam, at: at(3))).map(\.value) == [0])
    }

    @Test func zoomFollowsRangeAndValueChangesMadeElsewhere() throws {
        let cam = SimCamera()
        let s = ControlsSession()
        _ = s.addDefaultControls(camera: cam, at: at(0))
        cam.changeExternally(.zoomAbsolute, to: 250)
        let e = s.cameraChanged(cam, at: at(1))
        #expect(changes(e) == [ControlValueChange(control: "zoom", value: 2.5, raw: 250, origin: .external, time: at(1))])
        // The next slide starts from there.
        #expect(changes(s.handle(.slide(1), at: at(2))).map(\.raw) == [258])
        // A format change shrinks the range: the scale is refreshed and the value clamped.
        cam.changeRange(.zoomAbsolute, minimum: 100, maximum: 200)
        let r = s.cameraChanged(cam, at: at(3))
        #expect(s.controls.first?.scale == .continuous(range: 1...2, prominentValues: []))
        #expect(changes(r).map(\.value) == [2])
        // The app sets the zoom: the camera follows.
        let app = s.controlValueChangedExternally(named: "zoom", to: 1.5, at: at(4))
        #expect(changes(app).map(\.raw) == [150])
        #expect(try cam.value(of: .zoomAbsolute) == 150)
    }

    @Test func secondSystemZoomOnTheSimIsRefused() throws {
        let s = ControlsSession()
        _ = s.addDefaultControls(camera: SimCamera(), at: at(0))
        var again = try Control.systemZoomSlider(camera: SimCamera())
        again.name = "zoom-again"
        #expect(!s.canAddControl(again))
        var other = try Control.systemZoomSlider(camera: SimCamera(identity: "sim-2"))
        other.name = "zoom-2"
        #expect(s.canAddControl(other))
    }
}

/// uvcvideo's rounding rule, checked through the simulator with a custom step.
enum SimCameraStepCheck {
    static func rounded(_ v: Int64, min: Int64, max: Int64, step: Int64) -> Int64 {
        SimCamera.clampedAndRounded(
            v, CameraControlInfo(id: .zoomAbsolute, name: "z", minimum: min, maximum: max, step: step, defaultValue: min, value: min))
    }
}
