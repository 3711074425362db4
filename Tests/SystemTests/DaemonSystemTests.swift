#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import EvcaptureDaemon
import Camera
import Output
import ConfigFile
import Evdev
import Foundation
import Testing
import Recording

/// `evcapture run` end to end on the real kernel: the built executable as a child process,
/// uinput devices made from the fixtures, the fake UVC camera for controls, vivid for
/// photos and videos. The daemon's JSON lines on stdout are the main evidence; files,
/// hook output, the camera's received values and a second evdev reader are the rest.
@Suite(.systemTest, .needsDaemonExecutable, .serialized)
struct DaemonSystemTests {
    /// Click → photo (a JPEG that decodes) and hook (its environment); long press → MP4 (H.264);
    /// encoder steps → zoom on the camera; headset click → sound.
    @Test(.needsFakeCamera, .enabled(if: vividNode() != nil, "needs vivid (vivid-000-vid-cap)"))
    func clickPhotoHookVideoZoomAndHeadsetSound() throws {
        let camera = try FakeCamera()
        let cameraNode = try camera.start()
        defer { try? camera.stop() }
        let vivid = try #require(vividNode())

        let scratch = try DaemonScratch("actions")
        let hook = try scratch.installEnvironmentHook()
        try scratch.installFakeSoundPlayers()
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "\(cameraNode)"
            capture-device = "\(vivid)"
            width = 320
            height = 240

            [output]
            directory = "\(scratch.output)"

            [[hooks]]
            name = "dump-env"
            argv = ["\(hook)"]
            on = ["began", "click"]
            """)

        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let knob = try fixtureDevice("rotary-encoder-rel-x")
        let headset = try fixtureDevice("bluez-avrcp-headset")

        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        for node in [keys.node, knob.node, headset.node] {
            try #require(daemon.waitFor(DaemonLines.deviceAdded(node)) != nil, "device \(node) not added\n\(daemon.transcript)")
        }
        #expect(daemon.waitFor(DaemonLines.session("started")) != nil, "\(daemon.transcript)")

        // A click: began, ended with gesture click, a photo, and the hook for began and click.
        try keys.click(.volumeDown)
        let began = try #require(daemon.waitFor(DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let press = try #require(began.object.int("press"))
        #expect(began.object.string("button") == "KEY_VOLUMEDOWN")
        #expect(began.object.string("action") == "primary")
        #expect(began.object.string("device") == "gpio-keys")
        #expect(began.object.bool("sound") == false)
        let ended = try #require(
            daemon.waitFor(from: began.index, DaemonLines.capture("ended", node: keys.node, press: press)), "\(daemon.transcript)")
        #expect(ended.object.string("gesture") == "click", "\(ended.object)")

        let photo = try #require(daemon.waitFor(DaemonLines.action("photo", press: press)), "no photo\n\(daemon.transcript)")
        let photoPath = try #require(photo.object.string("file"))
        #expect(photoPath.hasPrefix(scratch.output + "/") && photoPath.hasSuffix(".jpg"), "\(photoPath)")
        let jpeg = [UInt8](try Data(contentsOf: URL(fileURLWithPath: photoPath)))
        #expect(looksLikeJPEG(jpeg), "\(photoPath): \(jpeg.count) bytes, not SOI…EOI")
        let info = try JPEG.decode(jpeg)
        #expect(info.width == 320 && info.height > 0 && info.warnings == 0, "\(info)")
        // Zero shutter lag: the frame of the press, not of the decision at release (the ring
        // runs while the session does); the precise nearest-frame check is ActionsCameraTests'.
        let pressTime = try #require(began.object.double("time"))
        let frameTime = try #require(photo.object.double("frame_time"), "no frame_time: \(photo.object)")
        #expect(abs(frameTime - pressTime) < 0.2, "frame \(frameTime), press \(pressTime)")
        #expect(JPEG.captureTime(of: jpeg) != nil, "no EXIF DateTimeOriginal")

        for event in ["began", "click"] {
            var env: [String: String]?
            _ = pollUntil(timeout: .seconds(20)) {
                env = scratch.hookEnvironment(press: press, event: event)
                return env != nil
            }
            let e = try #require(env, "the hook did not run for \(event)\n\(daemon.transcript)")
            #expect(e["EVCAPTURE_PHASE"] == (event == "began" ? "began" : "ended"), "\(event): \(e)")
            #expect(e["EVCAPTURE_EVENT"] == event)
            #expect(e["EVCAPTURE_ACTION"] == "primary")
            #expect(e["EVCAPTURE_BUTTON"] == "KEY_VOLUMEDOWN")
            #expect(e["EVCAPTURE_DEVICE"] == "gpio-keys")
            #expect(e["EVCAPTURE_DEVICE_NODE"] == keys.node)
            #expect(e["EVCAPTURE_PRESS"] == String(press))
            #expect(e["EVCAPTURE_SOUND"] == "0")
            if event == "click" { #expect(e["EVCAPTURE_GESTURE"] == "click") }
        }

        // A 2 s long press: held (long-press) at the threshold, then a video.
        let beforeLong = daemon.objects.count
        try keys.click(.volumeDown, hold: .seconds(2))
        let longBegan = try #require(
            daemon.waitFor(from: beforeLong, DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let longPress = try #require(longBegan.object.int("press"))
        let held = daemon.waitFor(from: beforeLong, DaemonLines.capture("held", node: keys.node, press: longPress))
        #expect(held?.object.string("gesture") == "long-press", "\(daemon.transcript)")
        let longEnded = daemon.waitFor(from: beforeLong, DaemonLines.capture("ended", node: keys.node, press: longPress))
        #expect(longEnded != nil && longEnded?.object.string("gesture") == nil, "\(daemon.transcript)")
        let video = try #require(
            daemon.waitFor(timeout: .seconds(30), DaemonLines.action("video", press: longPress)), "no video\n\(daemon.transcript)")
        let videoPath = try #require(video.object.string("file"))
        let frames = try #require(video.object.int("frames"))
        // From the press, not from the hold threshold 0.5 s later.
        let longPressTime = try #require(longBegan.object.double("time"))
        let firstFrame = try #require(video.object.double("frame_time"), "no frame_time: \(video.object)")
        #expect(abs(firstFrame - longPressTime) < 0.2, "first frame \(firstFrame), press \(longPressTime)")
        #expect(videoPath.hasSuffix(".mp4") && FileManager.default.fileExists(atPath: videoPath), "\(videoPath)")
        // About 1.5 s recorded (threshold 0.5 s → release at 2 s); vivid's nominal rate is
        // 30/s, the emulator delivers fewer.
        #expect((2...120).contains(frames), "\(frames) frames")
        if let ffprobe = daemonFFprobe {
            let result = try run(
                ffprobe, "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                "stream=codec_name,nb_read_frames", "-of", "default=noprint_wrappers=1", videoPath, timeout: .seconds(60))
            #expect(result.succeeded, "\(result)")
            #expect(result.stdout.contains("nb_read_frames=\(frames)"), "ffprobe: \(result.stdout) (daemon: \(frames))")
            #expect(result.stdout.contains("codec_name=h264"), "\(result.stdout)")
        } else {
            Issue.record("ffprobe is not installed here: the MP4 was not decoded (\(videoPath), \(frames) frames)")
        }

        // Encoder +5 steps: zoom 1.0× → 1.4× (4.0× range / 50 steps per range = 0.08× per
        // step): zoom_absolute 100 → 140 on the camera.
        for _ in 0..<5 { try knob.move(.relX, by: 1) }
        #expect(camera.waitUntilReceived("zoom_absolute", 140, timeout: .seconds(20)), "\(camera.log)\n\(daemon.transcript)")
        let zooms = camera.received().filter { $0.control == "zoom_absolute" }.map(\.value)
        #expect(zooms.last == 140, "zoom values received: \(zooms)")
        #expect(zooms.allSatisfy { (100...140).contains($0) }, "zoom values received: \(zooms)")
        let control = daemon.waitFor { $0.event == "control" && $0.string("control") == "zoom" && $0.int("raw") == 140 }
        #expect(control?.object.double("value") == 1.4, "\(daemon.transcript)")

        // A headset click: sound true, and the shutter sound is played.
        try headset.click(.playCD)
        let headsetEnded = try #require(
            daemon.waitFor(DaemonLines.capture("ended", node: headset.node)), "\(daemon.transcript)")
        #expect(headsetEnded.object.bool("sound") == true, "\(headsetEnded.object)")
        #expect(headsetEnded.object.string("button") == "KEY_PLAYCD")
        let headsetPress = try #require(headsetEnded.object.int("press"))
        let sound = daemon.waitFor(DaemonLines.action("sound", press: headsetPress))
        #expect(sound?.object.string("file")?.hasSuffix("evcapture-shutter.wav") == true, "\(daemon.transcript)")
        #expect(
            pollUntil(timeout: .seconds(20)) { scratch.soundsPlayed.contains { $0.hasSuffix("evcapture-shutter.wav") } },
            "sound players ran: \(scratch.soundsPlayed)")
        // The volume-key click played nothing.
        #expect(scratch.soundsPlayed.count == 1, "\(scratch.soundsPlayed)")

        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        #expect(!daemon.objects.contains { $0.event == "error" }, "\(daemon.transcript)")
    }

    /// While running, a dedicated device (gpio-keys) is grabbed: another reader sees nothing.
    /// SIGTERM: a press in flight is cancelled, the session stops, exit status 0, and the
    /// other reader gets the device's events again.
    @Test func sigtermReleasesTheGrabAndExitsZero() throws {
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let (scratch, daemon) = try startDaemonWithActionsOff("grab", camera: "none", devices: [keys])
        defer { withExtendedLifetime(scratch) { _ = daemon.terminate() } }

        // The daemon reads the device (and has grabbed it: the grab is taken when added).
        try keys.click(.volumeDown)
        try #require(daemon.waitFor(DaemonLines.capture("ended", node: keys.node)) != nil, "\(daemon.transcript)")

        let other = try EvdevDevice.open(keys.node)
        defer { other.close() }
        #expect(other.readAvailable().isEmpty)
        let before = daemon.objects.count
        try keys.click(.volumeDown)
        try #require(daemon.waitFor(from: before, DaemonLines.capture("ended", node: keys.node)) != nil, "\(daemon.transcript)")
        let whileGrabbed = other.readAvailable()
        #expect(whileGrabbed.isEmpty, "a second reader got events of a grabbed device: \(whileGrabbed)")

        // A press in flight when SIGTERM comes is cancelled by the shutdown.
        let beforeHold = daemon.objects.count
        try keys.press(.volumeDown)
        let inFlight = try #require(
            daemon.waitFor(from: beforeHold, DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let inFlightPress = try #require(inFlight.object.int("press"))
        let status = daemon.terminate()
        #expect(status == 0, "\(daemon.transcript)")
        let cancelled = daemon.objects.first(where: DaemonLines.capture("cancelled", node: keys.node, press: inFlightPress))
        #expect(cancelled?.string("reason") == "session-stopped", "\(daemon.transcript)")
        #expect(daemon.objects.contains { DaemonLines.session("stopped")($0) && $0.string("reason") == "shutdown" }, "\(daemon.transcript)")
        try keys.release(.volumeDown)

        // Released: the other reader gets a new press and its release.
        try keys.click(.volumeDown)
        var seen: [String] = []
        let got = pollUntil(timeout: .seconds(10)) {
            for input in other.readAvailable() {
                if case .frame(let f) = input { seen += f.events.map { "\($0.eventCode.name) \($0.value)" } }
            }
            return seen.suffix(2) == ["KEY_VOLUMEDOWN 1", "KEY_VOLUMEDOWN 0"]
        }
        #expect(got, "after SIGTERM the other reader saw \(seen)")
    }

    /// A key already down when the daemon starts is ignored until released, and the device
    /// is grabbed only once no key is down (the system sees that key's release).
    @Test func aKeyHeldAtStartIsIgnoredAndDelaysTheGrab() throws {
        let scratch = try DaemonScratch("held")
        let config = try scratch.write("evcapture.toml", Self.noActionsConfig)
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let other = try EvdevDevice.open(keys.node)
        defer { other.close() }
        try keys.press(.volumeDown)
        _ = other.readAvailable()

        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")
        let added = daemon.objects.count
        try keys.release(.volumeDown)
        var seen: [String] = []
        func readOther() {
            for input in other.readAvailable() {
                if case .frame(let f) = input { seen += f.events.map { "\($0.eventCode.name) \($0.value)" } }
            }
        }
        #expect(
            pollUntil(timeout: .seconds(10)) {
                readOther(); return seen.contains("KEY_VOLUMEDOWN 0")
            },
            "the held key's release did not reach another reader (grabbed while down?): \(seen)")

        // The first press reported is the next click; the held key's release made no line.
        try keys.click(.volumeDown)
        let ended = try #require(daemon.waitFor(from: added, DaemonLines.capture("ended", node: keys.node)), "\(daemon.transcript)")
        let captures = daemon.objects[added...].filter { $0.event == "capture" }
        #expect(captures.map { $0.string("phase") } == ["began", "ended"], "\(daemon.transcript)")
        #expect(captures.allSatisfy { $0.int("press") == ended.object.int("press") }, "\(daemon.transcript)")

        // Now idle and grabbed: another click reaches the daemon only.
        readOther()
        let before = daemon.objects.count
        seen = []
        try keys.click(.volumeDown)
        try #require(daemon.waitFor(from: before, DaemonLines.capture("ended", node: keys.node)) != nil, "\(daemon.transcript)")
        readOther()
        #expect(seen.isEmpty, "another reader got events while the daemon holds the grab: \(seen)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }

    /// An input device unplugged while its key is down: the press is cancelled
    /// (`device-removed`) and the device reported removed; the daemon carries on. (The input
    /// core sends key-ups for keys still down when a device goes away; they must not end
    /// the press as if released — a click would take a photo.)
    @Test func unpluggingADeviceMidPressCancelsThePress() throws {
        let scratch = try DaemonScratch("unplug")
        let config = try scratch.write("evcapture.toml", Self.noActionsConfig)
        var keys: UinputDevice? = try fixtureDevice("gpio-keys-volume-keys")
        let node = keys!.node
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(node)) != nil, "\(daemon.transcript)")
        try keys!.press(.volumeDown)
        let began = try #require(daemon.waitFor(DaemonLines.capture("began", node: node)), "\(daemon.transcript)")
        let press = try #require(began.object.int("press"))
        keys!.destroy()
        keys = nil
        let cancelled = daemon.waitFor(DaemonLines.capture("cancelled", node: node, press: press))
        #expect(cancelled?.object.string("reason") == "device-removed", "\(daemon.transcript)")
        let removed = daemon.waitFor { $0.event == "device" && $0.string("change") == "removed" && $0.string("node") == node }
        #expect(removed != nil && cancelled != nil && removed!.index > cancelled!.index, "\(daemon.transcript)")
        #expect(!daemon.objects.contains(where: DaemonLines.capture("ended", node: node, press: press)), "\(daemon.transcript)")

        // A new device (a replug; the kernel may give it the same node) works.
        let afterRemoval = daemon.objects.count
        let again = try fixtureDevice("gpio-keys-volume-keys")
        try #require(daemon.waitFor(from: afterRemoval, DaemonLines.deviceAdded(again.node)) != nil, "\(daemon.transcript)")
        let before = daemon.objects.count
        try again.click(.volumeDown)
        #expect(daemon.waitFor(from: before, DaemonLines.capture("ended", node: again.node)) != nil, "\(daemon.transcript)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }

    /// SIGTERM while a long press records: the press is cancelled, the recording is finished
    /// (a complete AVI, reported before exit) and the exit status is 0.
    @Test(.enabled(if: vividNode() != nil, "needs vivid (vivid-000-vid-cap)"))
    func sigtermFinishesARecordingInProgress() throws {
        let vivid = try #require(vividNode())
        let scratch = try DaemonScratch("recording")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"
            capture-device = "\(vivid)"
            width = 320
            height = 240

            [output]
            directory = "\(scratch.output)"
            """)
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")
        try keys.press(.volumeDown)
        defer { try? keys.release(.volumeDown) }
        let held = try #require(daemon.waitFor(DaemonLines.capture("held", node: keys.node)), "\(daemon.transcript)")
        let press = try #require(held.object.int("press"))
        try #require(
            daemon.waitFor(timeout: .seconds(30), DaemonLines.action("video-started", press: press)) != nil, "\(daemon.transcript)")

        #expect(daemon.terminate(timeout: .seconds(30)) == 0, "\(daemon.transcript)")
        let cancelled = daemon.objects.first(where: DaemonLines.capture("cancelled", node: keys.node, press: press))
        #expect(cancelled?.string("reason") == "session-stopped", "\(daemon.transcript)")
        let video = try #require(
            daemon.objects.first(where: DaemonLines.action("video", press: press)), "no video line\n\(daemon.transcript)")
        let path = try #require(video.string("file"))
        let frames = try #require(video.int("frames"))
        #expect(frames >= 1, "\(video)")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: scratch.output)) ?? []
        #expect(files == [(path as NSString).lastPathComponent], "output directory: \(files)")
        if let ffprobe = daemonFFprobe {
            let result = try run(
                ffprobe, "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                "stream=nb_read_frames", "-of", "default=noprint_wrappers=1", path, timeout: .seconds(60))
            #expect(result.succeeded && result.stdout.contains("nb_read_frames=\(frames)"), "\(result)")
        } else {
            Issue.record("ffprobe is not installed here: the MP4 was not decoded (\(path), \(frames) frames)")
        }
    }

    static let noActionsConfig = """
        [camera]
        device = "none"

        [handlers.primary]
        click = "none"
        long-press = "none"
        """

    /// Clients of `--socket` get the same lines as stdout; a client that never reads is
    /// dropped without holding up the others or stdout.
    @Test func socketClientsGetTheLinesAndAStalledClientIsDropped() throws {
        let scratch = try DaemonScratch("socket")
        let socketPath = scratch.path + "/s.sock"
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"

            [handlers.primary]
            click = "none"
            long-press = "none"
            """)
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let daemon = try DaemonProcess(
            scratch.label, arguments: ["run", "--config", config, "--json", "--socket", socketPath], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")

        var st = stat()
        #expect(lstat(socketPath, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK, "no socket at \(socketPath)")
        #expect(st.st_mode & 0o777 == 0o660, "socket mode \(String(st.st_mode & 0o777, radix: 8))")

        // The stalled client connects first: once the reader gets lines, both are accepted
        // (the daemon accepts every pending connection at once).
        let stalled = try SocketServer.connect(to: socketPath)
        var stalledClosed = false
        defer { if !stalledClosed { close(stalled) } }
        let reader = try SocketClient(path: socketPath)
        let accepted = try (0..<5).contains { _ in
            let before = daemon.objects.count
            try keys.click(.volumeDown)
            guard let ended = daemon.waitFor(from: before, DaemonLines.capture("ended", node: keys.node)),
                let press = ended.object.int("press")
            else { return false }
            return pollUntil(timeout: .seconds(5)) {
                reader.objects.contains(where: DaemonLines.capture("ended", node: keys.node, press: press))
            }
        }
        try #require(accepted, "the socket client got no lines\n\(daemon.transcript)")

        // One click: the same capture lines, byte for byte, on stdout and on the socket.
        let beforeObjects = daemon.objects.count
        let before = daemon.lines.count
        try keys.click(.volumeDown)
        let ended = try #require(
            daemon.waitFor(from: beforeObjects, DaemonLines.capture("ended", node: keys.node)), "\(daemon.transcript)")
        let press = try #require(ended.object.int("press"))
        let stdoutLines = daemon.lines[before...].filter { $0.contains("\"event\":\"capture\"") && $0.contains("\"press\":\(press),") }
        #expect(stdoutLines.count == 2, "\(daemon.transcript)")
        #expect(
            pollUntil(timeout: .seconds(10)) {
                reader.lines.filter { $0.contains("\"press\":\(press),") } == Array(stdoutLines)
            }, "socket: \(reader.lines)\nstdout: \(stdoutLines)")

        // Many clicks: the stalled client fills its buffers and is dropped; stdout and the
        // reading client get every press.
        let firstPress = press + 1
        var clicks = 0
        let batch = 10
        func endedCount(_ lines: [String]) -> Int {
            lines.filter { $0.contains("\"phase\":\"ended\"") && $0.contains("\"event\":\"capture\"") }.count
        }
        let endedBefore = endedCount(daemon.lines)
        while clicks < 3000 && !daemon.stderr.contains("socket client dropped") {
            for _ in 0..<batch { try keys.click(.volumeDown) }
            clicks += batch
            // Paced by the daemon: the kernel's per-reader buffer holds only a few presses.
            let caughtUp = pollUntil(timeout: .seconds(20)) { endedCount(daemon.lines) - endedBefore >= clicks }
            try #require(caughtUp, "the daemon fell behind after \(clicks) clicks\n\(daemon.stderr)")
        }
        #expect(daemon.stderr.contains("socket client dropped"), "not dropped after \(clicks) clicks\n\(daemon.stderr)")

        let expectedPresses = Set(firstPress..<(firstPress + clicks))
        func endedPresses(_ objects: [JSONObject]) -> Set<Int> {
            Set(
                objects.filter { $0.event == "capture" && $0.string("phase") == "ended" && $0.string("node") == keys.node }
                    .compactMap { $0.int("press") })
        }
        #expect(endedPresses(daemon.objects).isSuperset(of: expectedPresses), "stdout missed presses")
        #expect(
            pollUntil(timeout: .seconds(20)) { endedPresses(reader.objects).isSuperset(of: expectedPresses) },
            "the reading client missed \(expectedPresses.subtracting(endedPresses(reader.objects)).count) presses")
        #expect(!daemon.objects.contains { $0.event == "capture" && $0.string("phase") == "cancelled" }, "\(daemon.stderr)")

        // The stalled client: what was queued for it, then end of file (the daemon closed it).
        stalledClosed = true
        let stalledReader = DescriptorCollector(fd: stalled, name: "stalled-client")
        #expect(pollUntil(timeout: .seconds(20)) { stalledReader.isFinished }, "the stalled client was not disconnected")
        #expect(endedCount(stalledReader.lines) < clicks, "the stalled client got everything?")
        #expect(!reader.isClosedByServer, "the reading client was dropped too")

        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        #expect(access(socketPath, F_OK) != 0, "the socket file is left after exit")
    }

    /// The controls camera unplugged while a press is down: the press is cancelled
    /// (`session-stopped`) and the session stops; plugged in again: the session starts and
    /// the zoom the person set is applied to the camera again.
    @Test(.needsFakeCamera)
    func cameraReplugCancelsPressesAndReappliesZoom() throws {
        let camera = try FakeCamera()
        let cameraNode = try camera.start()
        defer { try? camera.stop() }
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let knob = try fixtureDevice("rotary-encoder-rel-x")
        let (scratch, daemon) = try startDaemonWithActionsOff("replug", camera: cameraNode, devices: [keys, knob])
        // the scratch directory (config, state) lives until the daemon is gone
        defer { withExtendedLifetime(scratch) { _ = daemon.terminate() } }
        for _ in 0..<5 { try knob.move(.relX, by: 1) }
        try #require(camera.waitUntilReceived("zoom_absolute", 140, timeout: .seconds(20)), "\(camera.log)\n\(daemon.transcript)")

        let before = daemon.objects.count
        try keys.press(.volumeDown)
        let began = try #require(daemon.waitFor(from: before, DaemonLines.capture("began", node: keys.node)), "\(daemon.transcript)")
        let press = try #require(began.object.int("press"))

        try camera.stop()
        let cancelled = daemon.waitFor(from: before, DaemonLines.capture("cancelled", node: keys.node, press: press))
        #expect(cancelled?.object.string("reason") == "session-stopped", "\(daemon.transcript)")
        let stopped = daemon.waitFor(from: before, DaemonLines.session("stopped"))
        #expect(stopped?.object.string("reason") == "camera-removed", "\(daemon.transcript)")
        try keys.release(.volumeDown)
        // While stopped nothing is reported for the key.
        try keys.click(.volumeDown)

        let afterStop = daemon.objects.count
        try camera.start()
        let restarted = daemon.waitFor(from: afterStop, DaemonLines.session("started"))
        #expect(restarted != nil, "\(daemon.transcript)")
        #expect(
            camera.waitUntilReceived("zoom_absolute", 140, timeout: .seconds(20)), "not re-applied: \(camera.log)\n\(daemon.transcript)")

        // Nothing ended or began for the key while the session was stopped.
        let between = daemon.objects[before..<afterStop]
        #expect(!between.contains(where: DaemonLines.capture("ended", node: keys.node)), "\(daemon.transcript)")
        #expect(between.filter(DaemonLines.capture("began", node: keys.node)).count == 1, "\(daemon.transcript)")

        // Running again: a click is a capture again.
        let beforeClick = daemon.objects.count
        try keys.click(.volumeDown)
        #expect(daemon.waitFor(from: beforeClick, DaemonLines.capture("ended", node: keys.node)) != nil, "\(daemon.transcript)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }

    /// No camera at start (vivid has no zoom or exposure control, so it does not count): the
    /// daemon runs its capture events, and a camera plugged in later is picked up through
    /// udev — its controls join the pipeline and the knob drives its zoom.
    @Test(.needsFakeCamera)
    func aCameraPluggedInLaterIsPickedUp() throws {
        let scratch = try DaemonScratch("late-camera")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [handlers.primary]
            click = "none"
            long-press = "none"
            """)
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let knob = try fixtureDevice("rotary-encoder-rel-x")
        let daemon = try DaemonProcess(scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        for node in [keys.node, knob.node] {
            try #require(daemon.waitFor(DaemonLines.deviceAdded(node)) != nil, "\(daemon.transcript)")
        }
        #expect(
            daemon.objects.contains { $0.string("event") == "error" && ($0.string("message") ?? "").hasPrefix("camera:") },
            "\(daemon.transcript)")
        // Capture events work without a camera.
        try keys.click(.volumeDown)
        #expect(daemon.waitFor(DaemonLines.capture("ended", node: keys.node)) != nil, "\(daemon.transcript)")

        let camera = try FakeCamera()
        _ = try camera.start()
        defer { try? camera.stop() }
        let added = daemon.waitFor(DaemonLines.session("camera-added"))
        try #require(added != nil, "the camera was not picked up: \(daemon.transcript)")
        for _ in 0..<5 { try knob.move(.relX, by: 1) }
        #expect(camera.waitUntilReceived("zoom_absolute", 140, timeout: .seconds(20)), "\(camera.log)\n\(daemon.transcript)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
    }
}

/// A bad config: `file:line: problem` on stderr, a non-zero exit, and nothing started (no
/// output lines, no socket). Needs no kernel devices: runs on the host too.
@Suite(.needsDaemonExecutable)
struct DaemonConfigErrorTests {
    @Test(arguments: [
        ("unknown key", "[camera]\ndevice = \"none\"\nzoom = 3\n", 3, "unknown key \"zoom\""),
        ("wrong type", "[output]\n\njpeg-quality = \"high\"\n", 3, "output.jpeg-quality must be an integer"),
        (
            "hook shell string", "[[hooks]]\nargv = \"echo hi\"\n", 2,
            "hooks[0].argv must be a list of strings, not \"echo hi\": a hook runs a program without a shell; write argv = [\"echo\", \"hi\"]"
        ),
        ("TOML syntax", "[camera\ndevice = \"none\"\n", 1, "expected ']'"),
    ])
    func malformedConfigStopsBeforeAnythingStarts(_ name: String, _ text: String, _ line: Int, _ problem: String) throws {
        let scratch = try DaemonScratch("badconfig")
        let config = try scratch.write("bad.toml", text)
        let socketPath = scratch.path + "/s.sock"
        let daemon = try DaemonProcess(
            scratch.label, arguments: ["run", "--config", config, "--json", "--socket", socketPath], environment: scratch.environment)
        let status = daemon.waitForExit(timeout: .seconds(30))
        #expect(status != nil && status != 0, "\(name): \(daemon.transcript)")
        let firstLine = daemon.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.hasPrefix("\(config):\(line): "), "\(name): \(daemon.transcript)")
        #expect(firstLine.contains(problem), "\(name): \(daemon.transcript)")
        #expect(daemon.stdout.isEmpty, "\(name): \(daemon.transcript)")
        #expect(access(socketPath, F_OK) != 0, "\(name): a socket was created")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: scratch.output)) == [], "\(name): output written")
    }
}
