import EvcaptureTesting
import EvcaptureDaemon
import Camera
import Output
import ConfigFile
import Foundation
import LinuxIO
import Logging
import Testing
import V4L2

/// The camera session and the `controls` command on the fake UVC camera behind the kernel's
/// real uvcvideo driver. The evidence is what the camera itself received (its SET_CUR log).
/// Each test plugs the camera in (a fresh camera, its controls at their defaults) and
/// unplugs it at the end; serialized: there is one virtual USB cable.
@Suite(.needsFakeCamera, .serialized, .timeLimit(.minutes(2)))
struct CameraUVCTests {
    static let logger = Logger(label: "evcapture.tests.camera")
    /// udev's by-id link for the fake camera: USB manufacturer, product and serial strings.
    static let byID = "/dev/v4l/by-id/usb-evcapture_project_evcapture_fake_camera_EVC0001-video-index0"

    let camera: FakeCamera
    let node: String

    init() throws {
        camera = try FakeCamera()
        node = try camera.start()
    }

    /// A session on the fake camera, running, with its events collected; nil (and a
    /// recorded failure) when it never reported `started`. Stop it with ``stop()``.
    final class RunningSession {
        let loop: IOLoop
        let session: CameraSession
        let events: AsyncCollector<CameraSession.Event>
        private let task: Task<Void, Never>

        init?(_ configuration: CameraSession.Configuration) async throws {
            loop = try IOLoop()
            session = try CameraSession(configuration, loop: loop, logger: CameraUVCTests.logger)
            events = AsyncCollector(session.events)
            let session = session
            task = Task { await session.run() }
            guard await events.first(where: { if case .started = $0 { true } else { false } }) != nil else {
                Issue.record("the session never started: \(events.all)")
                stop()
                return nil
            }
        }

        func stop() {
            task.cancel()
            loop.stop()
        }
    }

    @Test func controlsCommandFindsTheCameraByItsControlsAndListsItsBindings() throws {
        // Automatic discovery passes over vivid's nodes (no zoom or exposure) to the camera.
        for arguments in [["controls", "--json"], ["controls", "--camera", node, "--json"]] {
            let result = try run([DaemonPaths.evcapture] + arguments)
            #expect(result.succeeded, "evcapture \(arguments): \(result)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                "not JSON: \(result.stdout)")
            #expect(object["event"] as? String == "controls")
            #expect(object["time"] as? NSNumber != nil)
            let device = try #require(object["camera"] as? [String: Any], "no camera: \(result.stdout)")
            #expect(device["driver"] as? String == "uvcvideo")
            #expect(device["device"] as? String == node)
            #expect(device["identity"] as? String == Self.byID)
            #expect((device["card"] as? String)?.hasPrefix(FakeCamera.cardName) == true, "\(device)")
            let controls = try #require(object["controls"] as? [[String: Any]])
            let byName = Dictionary(controls.compactMap { c in (c["name"] as? String).map { ($0, c) } }) { a, _ in a }

            let zoom = try #require(byName["zoom_absolute"], "\(byName.keys.sorted())")
            #expect(zoom["id"] as? String == "0x009a090d")
            #expect(zoom["type"] as? String == "int")
            #expect(zoom["minimum"] as? Int == 100)
            #expect(zoom["maximum"] as? Int == 500)
            #expect(zoom["step"] as? Int == 1)
            #expect(zoom["default"] as? Int == 100)
            #expect(zoom["value"] as? Int == 100)
            #expect(zoom["binds"] as? String == "zoom")

            let auto = try #require(byName["auto_exposure"])
            #expect(auto["type"] as? String == "menu")
            let menu = try #require(auto["menu"] as? [[String: Any]])
            #expect(menu.map { $0["index"] as? Int } == [0, 1])
            #expect(menu.map { $0["name"] as? String } == ["Auto Mode", "Manual Mode"])
            #expect(auto["value"] as? Int == 0)
            #expect((auto["binds"] as? String)?.hasPrefix("exposure-bias") == true, "\(auto)")

            let time = try #require(byName["exposure_time_absolute"])
            #expect(time["minimum"] as? Int == 3)
            #expect(time["maximum"] as? Int == 2047)
            #expect(time["default"] as? Int == 250)
            #expect((time["binds"] as? String)?.hasPrefix("exposure-bias") == true, "\(time)")

            let brightness = try #require(byName["brightness"])
            #expect(brightness["minimum"] as? Int == -64 && brightness["maximum"] as? Int == 64)
            #expect(brightness["binds"] is NSNull, "brightness drives no system control: \(brightness)")

            let bindings = try #require(object["bindings"] as? [String: Any])
            #expect(bindings["zoom"] as? String == "zoom_absolute")
            #expect(bindings["exposure-bias"] as? String == "emulated: auto_exposure + exposure_time_absolute")
        }
        // Listing reads; it writes nothing to the camera.
        #expect(try camera.receivedLines(after: 0).isEmpty, "\(camera.log)")
    }

    @Test func controlsCommandNamesAnUnusableCamera() throws {
        // vivid is a capture device without zoom or exposure: named, it is listed, unbound.
        let vivid = try #require(vividNode(), "no vivid-000-vid-cap")
        let ok = try run(DaemonPaths.evcapture, "controls", "--camera", vivid)
        #expect(ok.succeeded, "\(ok)")
        #expect(ok.stdout.contains("zoom: not available"), "\(ok.stdout)")
        #expect(ok.stdout.contains("exposure-bias: not available"), "\(ok.stdout)")
        let bad = try run(DaemonPaths.evcapture, "controls", "--camera", "/dev/video99")
        #expect(!bad.succeeded)
        #expect((bad.stdout + bad.stderr).contains("/dev/video99"), "\(bad)")
    }

    @Test func outOfRangeValuesReachTheCameraClampedAndInactiveOnesNotAtAll() throws {
        let device = try V4L2Device(path: node)
        var mark = camera.received().count
        #expect(try device.set(.zoomAbsolute, to: 9999) == 500)
        #expect(try camera.receivedLines(after: mark) == ["zoom_absolute = 500"])

        mark = camera.received().count
        #expect(try device.set(.zoomAbsolute, to: 7) == 100)
        #expect(try camera.receivedLines(after: mark) == ["zoom_absolute = 100"])

        // Auto exposure (the camera's default) makes the exposure time inactive: a typed
        // error before any write, and nothing reaches the camera.
        mark = camera.received().count
        let error = try #require(throws: V4L2Error.self) { try device.set(.exposureAbsolute, to: 300) }
        #expect(error.code == .inactive)
        #expect(error.control == "exposure_time_absolute")
        #expect(error.device == node)
        #expect(try camera.receivedLines(after: mark).isEmpty, "\(camera.log)")
        // In manual mode the same write goes through.
        mark = camera.received().count
        #expect(try device.set(.exposureAuto, to: 1) == 1)
        #expect(try device.set(.exposureAbsolute, to: 300) == 300)
        #expect(try camera.receivedLines(after: mark) == ["auto_exposure = 1", "exposure_time_absolute = 300"])
        #expect(camera.problems.isEmpty, "\(camera.log)")
    }

    @Test func exposureBiasEmulationAsTheCameraSeesIt() throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let session = try CameraSession(.init(camera: .path(node)), loop: loop, logger: Self.logger)
        guard case .emulated = session.bindings.exposureBias else {
            Issue.record("expected an emulated exposure bias, got \(session.bindings.exposureBias)")
            return
        }
        let backend = session.camera
        // The controls' own emulation (Capture's ExposureBiasDriver) through the session's camera.
        var driver = ExposureBiasDriver()
        #expect(try backend.value(of: .exposureAbsolute) == 250)  // the base
        // −1 EV: manual mode (menu index 1), half the base.
        // The session's camera writes on its own thread: wait for it before looking.
        var mark = camera.received().count
        #expect(try driver.apply(-1, camera: backend) == 125)
        #expect(backend.waitForWrites())
        #expect(try camera.receivedLines(after: mark) == ["auto_exposure = 1", "exposure_time_absolute = 125"])
        // −2 EV: a quarter (62.5, rounded).
        mark = camera.received().count
        #expect(try driver.apply(-2, camera: backend) == 63)
        #expect(backend.waitForWrites())
        #expect(try camera.receivedLines(after: mark) == ["exposure_time_absolute = 63"])
        // Back to 0 EV: the base exposure, then auto (menu index 0) again.
        mark = camera.received().count
        #expect(try driver.apply(0, camera: backend) == 250)
        #expect(backend.waitForWrites())
        #expect(try camera.receivedLines(after: mark) == ["exposure_time_absolute = 250", "auto_exposure = 0"])
        #expect(try backend.value(of: .exposureAuto) == 0)
        // In auto mode the exposure time is inactive: the writer asks the camera afresh and
        // refuses (a typed error in the session's events), nothing reaches the camera.
        // (V4L2Device.set refuses it synchronously: outOfRangeValuesReachTheCameraClampedAndInactiveOnesNotAtAll.)
        mark = camera.received().count
        _ = try? backend.set(.exposureAbsolute, to: 300)
        #expect(backend.waitForWrites())
        #expect(try camera.receivedLines(after: mark).isEmpty, "\(camera.log)")
        #expect(camera.problems.isEmpty, "\(camera.log)")
    }

    @Test func changesByAnotherProgramArriveAsControlEvents() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let device = try V4L2Device(path: node)
        try device.subscribe(to: .zoomAbsolute)
        let events = AsyncCollector(try device.notifications(on: loop))
        let set = try run("v4l2-ctl", "-d", node, "--set-ctrl", "zoom_absolute=222")
        #expect(set.succeeded, "\(set)")
        let got = await events.first { if case .control(let e) = $0 { e.id == .zoomAbsolute } else { false } }
        guard case .control(let event)? = got?.element else {
            Issue.record("no control event for zoom_absolute within 15 s; got \(events.all)")
            return
        }
        #expect(event.changes.contains(.value))
        #expect(event.value == 222)
        #expect(event.minimum == 100 && event.maximum == 500)
        #expect(camera.waitUntilReceived("zoom_absolute", 222), "\(camera.log)")
    }

    @Test func sessionFollowsChangesByAnotherProgram() async throws {
        // Follow (the default): the change is reported and becomes the value to keep.
        guard let running = try await RunningSession(.init(camera: .path(node))) else { return }
        defer { running.stop() }
        let (session, events) = (running.session, running.events)
        try session.camera.set(.zoomAbsolute, to: 300)
        #expect(session.camera.waitForWrites())
        let mark = camera.received().count
        for value in [150, 160] {
            let set = try run("v4l2-ctl", "-d", node, "--set-ctrl", "zoom_absolute=\(value)")
            #expect(set.succeeded, "\(set)")
            let changed = await events.first {
                if case .controlChanged(let u) = $0 { u.control.name == "zoom_absolute" && u.control.value == value } else { false }
            }
            #expect(changed != nil, "no follow event for \(value); got \(events.all)")
        }
        #expect(session.camera.personValue(of: .zoomAbsolute) == 160)
        // The session yields a restore right after the change it answers; the second change
        // was seen, so a restore of the first would be in the list by now. None: followed.
        #expect(!events.all.contains { if case .restored = $0 { true } else { false } }, "\(events.all)")
        #expect(try camera.receivedLines(after: mark) == ["zoom_absolute = 150", "zoom_absolute = 160"])
    }

    @Test func sessionRestoresChangesByAnotherProgram() async throws {
        // Restore: the person's value goes back, and the camera receives it again.
        guard let running = try await RunningSession(.init(camera: .path(node), onExternalChange: .restore)) else { return }
        defer { running.stop() }
        let (session, events) = (running.session, running.events)
        try session.camera.set(.zoomAbsolute, to: 300)
        #expect(session.camera.waitForWrites())
        let mark = camera.received().count
        let set = try run("v4l2-ctl", "-d", node, "--set-ctrl", "zoom_absolute=150")
        #expect(set.succeeded, "\(set)")
        let restored = await events.first {
            if case .restored(let name, _, let value) = $0 { name == "zoom_absolute" && value == 300 } else { false }
        }
        #expect(restored != nil, "not restored; got \(events.all)")
        #expect(try camera.receivedLines(after: mark) == ["zoom_absolute = 150", "zoom_absolute = 300"])
        #expect(try session.camera.value(of: .zoomAbsolute) == 300)
    }

    @Test func sessionGivesWayToAProgramThatKeepsChangingAValue() async throws {
        // Two restores within a minute are allowed; the third change is another program
        // fighting back: the session keeps its value and says so, instead of a set war.
        guard
            let running = try await RunningSession(.init(camera: .path(node), onExternalChange: .restore, restoreLimit: (2, .seconds(60))))
        else { return }
        defer { running.stop() }
        let (session, events) = (running.session, running.events)
        try session.camera.set(.zoomAbsolute, to: 300)
        #expect(session.camera.waitForWrites())
        let mark = camera.received().count
        var seen = 0
        for round in 1...2 {
            let set = try run("v4l2-ctl", "-d", node, "--set-ctrl", "zoom_absolute=150")
            #expect(set.succeeded, "\(set)")
            let restored = await events.first(after: seen) {
                if case .restored("zoom_absolute", _, 300) = $0 { true } else { false }
            }
            #expect(restored != nil, "round \(round): not restored; got \(events.all)")
            seen = (restored?.index ?? seen) + 1
        }
        let set = try run("v4l2-ctl", "-d", node, "--set-ctrl", "zoom_absolute=150")
        #expect(set.succeeded, "\(set)")
        let gaveWay = await events.first(after: seen) {
            if case .error(let e) = $0 { e.code == .busy && e.control == "zoom_absolute" } else { false }
        }
        #expect(gaveWay != nil, "no give-way error; got \(events.all)")
        #expect(events.all.filter { if case .restored = $0 { true } else { false } }.count == 2, "\(events.all)")
        #expect(session.camera.personValue(of: .zoomAbsolute) == 150)
        #expect(try session.camera.value(of: .zoomAbsolute) == 150)
        #expect(
            try camera.receivedLines(after: mark)
                == ["zoom_absolute = 150", "zoom_absolute = 300", "zoom_absolute = 150", "zoom_absolute = 300", "zoom_absolute = 150"])
    }

    @Test func unplugStopsTheSessionAndReplugResumesWithThePersonsValues() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let session = try CameraSession(
            .init(camera: .path(node)), loop: loop, logger: Self.logger)
        let events = AsyncCollector(session.events)
        let task = Task { await session.run() }
        defer { task.cancel() }
        let started = await events.first { if case .started = $0 { true } else { false } }
        #expect(started?.element == .started(identity: Self.byID, device: node, resumed: false), "\(events.all)")
        #expect(try session.camera.set(.zoomAbsolute, to: 321) == 321)
        #expect(camera.waitUntilReceived("zoom_absolute", 321), "\(camera.log)")
        // −1 EV, emulated: manual mode, then half the base exposure (made active by it).
        var bias = ExposureBiasDriver()
        #expect(try bias.apply(-1, camera: session.camera) == 125)
        #expect(camera.waitUntilReceived("exposure_time_absolute", 125), "\(camera.log)")

        try camera.stop()
        let stopped = await events.first { $0 == .stopped(.cameraRemoved) }
        #expect(stopped != nil, "no stopped event; got \(events.all)")
        #expect(!session.isRunning)
        #expect(!session.camera.isConnected)
        // Controls are disabled while it is away: a set is a typed "gone".
        do {
            try session.camera.set(.zoomAbsolute, to: 400)
            Issue.record("set succeeded on a removed camera")
        } catch {
            #expect(error.code == .deviceRemoved)
        }

        let replugged = try camera.start()
        let resumed = await events.first(after: stopped?.index ?? 0, timeout: .seconds(30)) {
            if case .started(Self.byID, _, true) = $0 { true } else { false }
        }
        #expect(resumed?.element == .started(identity: Self.byID, device: replugged, resumed: true), "\(events.all)")
        let restored = await events.first(after: resumed?.index ?? 0) {
            if case .restored("zoom_absolute", _, 321) = $0 { true } else { false }
        }
        #expect(restored != nil, "zoom not re-applied; got \(events.all)")
        // The fresh camera (its log starts at its start, its zoom at the default 100)
        // received the person's zoom again.
        #expect(camera.waitUntilReceived("zoom_absolute", 321), "\(camera.log)")
        // And the exposure in the order it was set: the fresh camera is in auto mode (its
        // exposure time inactive) until the re-applied manual mode makes it active.
        #expect(camera.waitUntilReceived("exposure_time_absolute", 125), "\(camera.log)")
        let lines = try camera.receivedLines(after: 0)
        #expect(
            lines.firstIndex(of: "auto_exposure = 1").map { a in
                lines.firstIndex(of: "exposure_time_absolute = 125").map { a < $0 } ?? false
            } == true,
            "\(lines)")
        #expect(session.isRunning)
        #expect(try session.camera.value(of: .zoomAbsolute) == 321)
    }
}
