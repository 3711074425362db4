import Bridge
import Capture
import Foundation
import IOLoop
import Logging
import Testing
import V4L2

/// The camera session on the fake UVC camera behind the real uvcvideo driver: what the
/// camera itself receives is the evidence (SET_CUR log). Serialized: one camera, and the
/// last test unplugs and replugs it.
@Suite(.enabled(if: CameraLab.uvcUnavailable == nil, "\(CameraLab.uvcUnavailable ?? "")"), .serialized, .timeLimit(.minutes(2)))
struct CameraUVCTests {
    static let logger = Logger(label: "evcapture.tests.camera")

    /// What the camera received after the first `count` entries.
    func received(since count: Int) async -> [String] { await CameraLab.received(since: count) }

    @Test func controlsCommandListsTheCameraAndItsBindings() throws {
        for arguments in [["controls", "--json"], ["controls", "--camera", CameraLab.uvcNode, "--json"]] {
            let run = try labRunProgram(evcaptureExecutable, arguments)
            #expect(run.status == 0, "evcapture \(arguments): \(run.err)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any], "not JSON: \(run.out)")
            #expect(object["event"] as? String == "controls")
            #expect(object["time"] as? NSNumber != nil)
            let camera = try #require(object["camera"] as? [String: Any])
            #expect(camera["driver"] as? String == "uvcvideo")
            #expect(camera["device"] as? String == CameraLab.uvcNode)
            #expect(camera["identity"] as? String == "/dev/v4l/by-id/usb-1234_5678-video-index0")
            let controls = try #require(object["controls"] as? [[String: Any]])
            let byName = Dictionary(controls.map { ($0["name"] as! String, $0) }, uniquingKeysWith: { a, _ in a })

            let zoom = try #require(byName["zoom_absolute"])
            #expect(zoom["id"] as? String == "0x009a090d")
            #expect(zoom["type"] as? String == "int")
            #expect(zoom["minimum"] as? Int == 100)
            #expect(zoom["maximum"] as? Int == 500)
            #expect(zoom["step"] as? Int == 1)
            #expect(zoom["default"] as? Int == 100)
            #expect(zoom["value"] is Int)
            #expect(zoom["binds"] as? String == "zoom")

            let auto = try #require(byName["auto_exposure"])
            #expect(auto["type"] as? String == "menu")
            let menu = try #require(auto["menu"] as? [[String: Any]])
            #expect(menu.map { $0["index"] as? Int } == [0, 1])
            #expect(menu.map { $0["name"] as? String } == ["Auto Mode", "Manual Mode"])

            let time = try #require(byName["exposure_time_absolute"])
            #expect(time["minimum"] as? Int == 3)
            #expect(time["maximum"] as? Int == 2047)
            #expect(time["default"] as? Int == 250)

            let focus = try #require(byName["focus_absolute"])
            #expect(focus["step"] as? Int == 5)
            #expect(byName["pan_absolute"]?["step"] as? Int == 3600)

            let bindings = try #require(object["bindings"] as? [String: Any])
            #expect(bindings["zoom"] as? String == "zoom_absolute")
            #expect(bindings["exposure-bias"] as? String == "emulated: auto_exposure + exposure_time_absolute")
        }
    }

    @Test func controlsCommandWithoutUsableNamedCameraFails() throws {
        // vivid is not a camera with zoom/exposure, but it is a capture device: named, it works.
        if let vivid = CameraLab.environment["EVCAPTURE_TEST_VIVID"] {
            let ok = try labRunProgram(evcaptureExecutable, ["controls", "--camera", vivid])
            #expect(ok.status == 0)
            #expect(ok.out.contains("zoom: not available"))
        }
        let bad = try labRunProgram(evcaptureExecutable, ["controls", "--camera", "/dev/video99"])
        #expect(bad.status != 0)
        #expect((bad.out + bad.err).contains("/dev/video99"))
    }

    @Test func outOfRangeAndOffStepValuesReachTheCameraClampedAndRounded() async throws {
        let device = try V4L2Device(path: CameraLab.uvcNode)
        var before = await CameraLab.settledCount()
        #expect(try device.set(.zoomAbsolute, to: 9999) == 500)
        #expect(await received(since: before) == ["zoom_absolute = 500"])

        before = await CameraLab.settledCount()
        #expect(try device.set(.zoomAbsolute, to: 7) == 100)
        #expect(await received(since: before) == ["zoom_absolute = 100"])

        // Off the step grid: focus_absolute 0...250 step 5 (autofocus off first, or it is inactive).
        let focusAuto = ControlID(0x009a_090c)
        try device.set(focusAuto, to: 0)
        before = await CameraLab.settledCount()
        #expect(try device.set(.focusAbsolute, to: 13) == 15)
        #expect(await received(since: before) == ["focus_absolute = 15"])
        try device.set(focusAuto, to: 1)
        // ... and with autofocus back on, a typed error, and nothing reaches the camera.
        before = await CameraLab.settledCount()
        let error = try #require(throws: V4L2Error.self) { try device.set(.focusAbsolute, to: 20) }
        #expect(error.code == .inactive)
        #expect(await received(since: before).isEmpty)
    }

    @Test func exposureBiasEmulationAsTheCameraSeesIt() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let session = try CameraSession(.init(camera: .path(CameraLab.uvcNode)), loop: loop, logger: Self.logger)
        guard case .emulated = session.bindings.exposureBias else {
            Issue.record("expected emulated exposure bias, got \(session.bindings.exposureBias)")
            return
        }
        let camera = session.camera
        // The controls' own emulation (Capture's ExposureBiasDriver) through the session's camera.
        var driver = ExposureBiasDriver()
        #expect(try camera.value(of: .exposureAbsolute) == 250)  // the base
        // −1 EV: manual mode, half the base.
        var before = await CameraLab.settledCount()
        #expect(try driver.apply(-1, camera: camera) == 125)
        #expect(await received(since: before) == ["ae_mode = 1", "exposure_time_absolute = 125"])
        // −2 EV: a quarter (62.5, rounded).
        before = await CameraLab.settledCount()
        #expect(try driver.apply(-2, camera: camera) == 63)
        #expect(await received(since: before) == ["exposure_time_absolute = 63"])
        // Back to 0 EV: the base exposure, then auto again.
        before = await CameraLab.settledCount()
        #expect(try driver.apply(0, camera: camera) == 250)
        #expect(await received(since: before) == ["exposure_time_absolute = 250", "ae_mode = 2"])
        #expect(try camera.value(of: .exposureAuto) == 0)
        // In auto mode the exposure time is inactive: a typed error, nothing reaches the camera.
        before = await CameraLab.settledCount()
        do {
            try camera.set(.exposureAbsolute, to: 300)
            Issue.record("exposure time was set while auto exposure is on")
        } catch {
            #expect(error.code == .inactive)
            #expect(error.control == "exposure_time_absolute")
            #expect(error.device == CameraLab.uvcNode)
        }
        #expect(await received(since: before).isEmpty)
    }

    @Test func changesByAnotherProgramArriveAsControlEvents() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let device = try V4L2Device(path: CameraLab.uvcNode)
        try device.subscribe(to: .zoomAbsolute)
        let events = Collected(try device.notifications(on: loop))
        defer { events.cancel() }
        let run = try labRunProgram("/usr/bin/v4l2-ctl", ["-d", CameraLab.uvcNode, "--set-ctrl", "zoom_absolute=222"])
        #expect(run.status == 0, "v4l2-ctl: \(run.err)")
        let got = await events.first { if case .control(let e) = $0 { e.id == .zoomAbsolute } else { false } }
        guard case .control(let event)? = got?.element else {
            Issue.record("no control event for zoom_absolute within 15 s; got \(events.all)")
            return
        }
        #expect(event.changes.contains(.value))
        #expect(event.value == 222)
        #expect(event.minimum == 100 && event.maximum == 500)
    }

    @Test func sessionFollowsOrRestoresChangesByAnotherProgram() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        // Follow (the default): the change is reported and becomes the value to keep.
        do {
            let session = try CameraSession(.init(camera: .path(CameraLab.uvcNode)), loop: loop, logger: Self.logger)
            let events = Collected(session.events)
            let task = Task { await session.run() }
            defer { task.cancel(); events.cancel() }
            #expect(await events.first { if case .started = $0 { true } else { false } } != nil)
            try session.camera.set(.zoomAbsolute, to: 300)
            _ = try labRunProgram("/usr/bin/v4l2-ctl", ["-d", CameraLab.uvcNode, "--set-ctrl", "zoom_absolute=150"])
            let changed = await events.first {
                if case .controlChanged(let u) = $0 { u.control.name == "zoom_absolute" && u.control.value == 150 } else { false }
            }
            #expect(changed != nil, "no follow event; got \(events.all)")
            #expect(session.camera.personValue(of: .zoomAbsolute) == 150)
            try await Task.sleep(for: .milliseconds(500))
            #expect(!events.all.contains { if case .restored = $0 { true } else { false } })
        }
        // Restore: the person's value goes back, and the camera receives it again.
        do {
            let session = try CameraSession(
                .init(camera: .path(CameraLab.uvcNode), onExternalChange: .restore), loop: loop, logger: Self.logger)
            let events = Collected(session.events)
            let task = Task { await session.run() }
            defer { task.cancel(); events.cancel() }
            #expect(await events.first { if case .started = $0 { true } else { false } } != nil)
            try session.camera.set(.zoomAbsolute, to: 300)
            let before = await CameraLab.settledCount()
            _ = try labRunProgram("/usr/bin/v4l2-ctl", ["-d", CameraLab.uvcNode, "--set-ctrl", "zoom_absolute=150"])
            let restored = await events.first {
                if case .restored(let name, _, let value) = $0 { name == "zoom_absolute" && value == 300 } else { false }
            }
            #expect(restored != nil, "not restored; got \(events.all)")
            #expect(await received(since: before) == ["zoom_absolute = 150", "zoom_absolute = 300"])
            #expect(try session.camera.value(of: .zoomAbsolute) == 300)
        }
    }

    /// Last: unplugs the camera.
    @Test func unplugStopsTheSessionAndReplugResumesWithThePersonsValues() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let session = try CameraSession(
            .init(camera: .path(CameraLab.uvcNode), reconnectInterval: .milliseconds(200)), loop: loop, logger: Self.logger)
        let events = Collected(session.events)
        let task = Task { await session.run() }
        defer { task.cancel(); events.cancel() }
        let started = await events.first { if case .started = $0 { true } else { false } }
        #expect(started?.element == .started(identity: "/dev/v4l/by-id/usb-1234_5678-video-index0", device: CameraLab.uvcNode, resumed: false))
        #expect(try session.camera.set(.zoomAbsolute, to: 321) == 321)

        try CameraLab.stop()
        let stopped = await events.first { $0 == .stopped(.cameraRemoved) }
        #expect(stopped != nil, "no stopped event; got \(events.all)")
        #expect(!session.isRunning)
        #expect(!session.camera.isConnected)
        // Controls are disabled while it is away: a set is a typed "gone".
        do {
            try session.camera.set(.zoomAbsolute, to: 400)
            Issue.record("set succeeded on a removed camera")
        } catch {
            #expect(error.code == .gone)
        }

        try CameraLab.start()
        let resumed = await events.first(after: stopped?.index ?? 0, timeout: .seconds(30)) {
            if case .started(_, _, true) = $0 { true } else { false }
        }
        #expect(resumed != nil, "not resumed; got \(events.all)")
        let restored = await events.first(after: resumed?.index ?? 0) {
            if case .restored("zoom_absolute", _, 321) = $0 { true } else { false }
        }
        #expect(restored != nil, "zoom not re-applied; got \(events.all)")
        // The fresh camera (its log starts at its start) received the person's zoom again.
        #expect(await CameraLab.received(since: 0).contains("zoom_absolute = 321"))
        #expect(session.isRunning)
        #expect(try session.camera.value(of: .zoomAbsolute) == 321)
    }
}
