import EvcaptureTesting
import Vocabulary
@testable import Camera
import Testing

/// The session: devices, cameras and actions around the pure core.
@Suite struct ControlsSessionTests {
    @Test func supportsControlsFollowsSliderDevices() {
        let s = ControlsSession()
        #expect(!s.supportsControls)
        s.deviceAdded(profile("switch", codes: [.enter], roles: [.enter: lightPress]))
        #expect(!s.supportsControls)  // a light press alone moves nothing
        let knob = profile("rotary", codes: [.relX], roles: [.relX: slider])
        s.deviceAdded(knob)
        #expect(s.supportsControls)
        s.deviceRemoved(node: knob.node)
        #expect(!s.supportsControls)
    }

    @Test func framesFromAnEncoderAndItsSwitchDriveTheZoom() {
        let cam = FakeCamera.uvc()
        let s = ControlsSession()
        let added = s.addDefaultControls(camera: cam, at: at(0))
        #expect(added == [.controlsChanged(["zoom", "exposure-bias"])])
        #expect(s.currentControl?.name == "zoom")
        let knob = profile("rotary", codes: [.relX], roles: [.relX: slider])
        let push = profile("switch", codes: [.enter], roles: [.enter: lightPress])
        s.deviceAdded(knob)
        s.deviceAdded(push)
        #expect(states(s.handle(frame: frame(0, (.enter, 1)), from: push.node)) == ["active:zoom"])
        let e = s.handle(frame: frame(0.1, (.relX, 1)), from: knob.node)
        #expect(e.contains(.value(ControlValueChange(control: "zoom", value: 1.08, raw: 108, origin: .person, time: at(0.1)))))
        #expect(try! cam.value(of: .zoomAbsolute) == 108)
        // Frames of unknown devices are ignored.
        #expect(s.handle(frame: frame(0.2, (.relX, 1)), from: "/dev/input/unknown").isEmpty)
    }

    @Test func nativeExposureBiasPicksTheNearestMenuEntry() throws {
        // An integer menu in 0.001 EV, as V4L2_CID_AUTO_EXPOSURE_BIAS drivers report it.
        let menu: [Int64: String] = [0: "-2000", 1: "-1000", 2: "0", 3: "1000", 4: "2000"]
        let cam = FakeCamera(controls: [
            CameraControlInfo(
                id: .autoExposureBias, name: "auto_exposure_bias", kind: .integerMenu, minimum: 0, maximum: 4, defaultValue: 2, value: 2,
                menu: menu)
        ])
        let s = ControlsSession()
        _ = try s.addControl(try Control.systemExposureBiasSlider(camera: cam), at: at(0))
        #expect(s.controls.map(\.value) == [0])
        let e = s.handle(.slide(3), at: at(1))  // +1 EV
        #expect(e.contains(.value(ControlValueChange(control: "exposure-bias", value: 1, raw: 3, origin: .person, time: at(1)))))
        #expect(try cam.value(of: .autoExposureBias) == 3)
        _ = s.handle(.slide(1), at: at(1.1))  // +4/3 EV: nearest entry is still +1 EV
        #expect(try cam.value(of: .autoExposureBias) == 3)
        // Another program sets −2 EV: the slider follows.
        try cam.set(.autoExposureBias, to: 0)
        #expect(values(s.cameraChanged(cam, at: at(2))) == [-2])
    }

    @Test func cameraWithoutZoomOrExposureGetsNoDefaultControls() {
        let cam = FakeCamera(controls: [
            CameraControlInfo(id: .brightness, name: "brightness", minimum: 0, maximum: 255, defaultValue: 128, value: 128)
        ])
        #expect(Control.defaultControls(camera: cam).isEmpty)
        #expect(throws: CameraError.self) { try Control.systemZoomSlider(camera: cam) }
        #expect(throws: CameraError.self) { try Control.systemExposureBiasSlider(camera: cam) }
    }

    /// One decision for the slider and the driver: native with `auto_exposure_bias`, emulated
    /// only when `auto_exposure` offers manual mode (index 1) and there is an exposure time.
    @Test func exposureBiasMethodIsDecidedOnce() throws {
        func info(_ id: CameraControlID, menu: [Int64: String] = [:]) -> CameraControlInfo {
            CameraControlInfo(
                id: id, name: "\(id)", kind: menu.isEmpty ? .integer : .menu, minimum: 0, maximum: 3, defaultValue: 0, value: 0, menu: menu)
        }
        let bias = info(.autoExposureBias, menu: [0: "-1000", 1: "0", 2: "1000"])
        let time = info(.exposureAbsolute)
        let manual = info(.exposureAuto, menu: [0: "Auto Mode", 1: "Manual Mode", 3: "Aperture Priority Mode"])
        let apertureOnly = info(.exposureAuto, menu: [0: "Auto Mode", 3: "Aperture Priority Mode"])
        func method(_ list: [CameraControlInfo]) -> ExposureBiasMethod { ExposureBiasMethod { id in list.first { $0.id == id } } }
        #expect(method([bias, manual, time]) == .native(bias))  // native wins over emulation
        #expect(method([manual, time]) == .emulated(auto: manual, time: time))
        #expect(method([apertureOnly, time]) == .unavailable)  // no manual mode to emulate with
        #expect(method([manual]) == .unavailable)
        #expect(method([time]) == .unavailable)
        // The slider and the driver follow the decision: no slider without manual mode, and the
        // driver refuses rather than setting a mode the camera does not have.
        let cam = FakeCamera(controls: [apertureOnly, time])
        #expect(throws: CameraError.self) { try Control.systemExposureBiasSlider(camera: cam) }
        var driver = ExposureBiasDriver()
        #expect(throws: CameraError.self) { try driver.apply(1, camera: cam) }
        #expect(try cam.value(of: .exposureAuto) == 0)
    }

    @Test func cameraErrorsAreReported() throws {
        let cam = FakeCamera.uvc()
        let s = ControlsSession()
        _ = s.addDefaultControls(camera: cam, at: at(0))
        cam.state.withLock { $0.removeAll { $0.id == .zoomAbsolute } }  // the camera lost its zoom
        let e = s.handle(.slide(1), at: at(1))
        #expect(
            e.contains { if case .error(let err, "zoom", _) = $0 { err.code == CameraError.Code.noSuchControl.rawValue } else { false } })
        #expect(values(e).isEmpty)
    }

    @Test func actionsGetPersonsValuesInOrder() async {
        let (stream, sink) = AsyncStream<Double>.makeStream()
        let action = ControlAction { sink.yield($0) }
        let s = ControlsSession()
        _ = try! s.addControl(
            .slider(name: "iso", title: "ISO", symbolName: "i", values: [100, 200, 400, 800], value: 100, action: action), at: at(0))
        _ = s.handle(.slide(1), at: at(0))
        _ = s.handle(.slide(1), at: at(0.1))
        _ = s.controlValueChangedExternally(named: "iso", to: 100, at: at(0.2))  // not a person: no action
        _ = s.handle(.slide(2), at: at(0.3))
        var got: [Double] = []
        for await v in stream {
            got.append(v)
            if got.count == 3 { break }
        }
        #expect(got == [200, 400, 400])
    }

    /// Property: whatever happens, the selection never rests on a disabled control.
    @Test func selectionNeverLandsOnADisabledControl() {
        var rng = SeededRandom(seed: 7)
        for _ in 0..<300 {
            let count = Int.random(in: 1...6, using: &rng)
            var c = core((0..<count).map { .slider(name: "c\($0)", title: "C\($0)", symbolName: "s", range: 0...1, value: 0) })
            var t = 0.0
            for _ in 0..<80 {
                t += [0.05, 0.2, 0.5, 1.5, 4][Int.random(in: 0..<5, using: &rng)]
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<4: _ = c.handle(.lightPress, at: at(t))
                case 4..<8: _ = c.handle(.slide(Int.random(in: -3...3, using: &rng)), at: at(t))
                case 8: _ = c.setEnabled(Bool.random(using: &rng), named: "c\(Int.random(in: 0..<count, using: &rng))", at: at(t))
                default: _ = c.advance(to: at(t))
                }
                if case .selecting(let h) = c.phase {
                    #expect(c.control(named: h)?.isEnabled == true, "selection on disabled \(h)")
                }
            }
        }
    }
}

import Dispatch
import Synchronization

/// A task executor on a serial queue that counts the jobs it runs.
final class CountingExecutor: TaskExecutor {
    let queue = DispatchQueue(label: "evcapture.test.executor")
    let jobs = Mutex(0)
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0 += 1 }
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

@Suite struct ControlActionExecutorTests {
    @Test func actionRunsOnTheExecutorTheAppChose() async {
        let executor = CountingExecutor()
        executor.queue.setSpecific(key: CountingExecutor.key, value: true)
        let (stream, sink) = AsyncStream<Bool>.makeStream()
        let action = ControlAction(executor: executor) { _ in
            // Runs inside a job of the chosen executor's queue.
            sink.yield(DispatchQueue.getSpecific(key: CountingExecutor.key) == true)
        }
        action.deliver(1)
        var onQueue: Bool?
        for await v in stream {
            onQueue = v
            break
        }
        #expect(onQueue == true)
        #expect(executor.jobs.withLock { $0 } > 0)
    }
}

extension CountingExecutor {
    static let key = DispatchSpecificKey<Bool>()
}
