#if canImport(Glibc)
import Glibc
#endif
import Vocabulary
import FoundationEssentials
import LinuxIO
import Logging
import ServiceLifecycle
import Synchronization
import Udev
import Camera
import Actions
import Output
import ConfigFile
import OutputDevices
import LibcameraCamera
import Frames
import Recording

/// A camera libcamera drives (docs/libcamera.md): the capture stream's frames from it, its
/// controls (zoom, exposure bias) on the running stream, autofocus at a press.
struct LibcameraSource: Sendable {
    let choice: LibcameraChoice
    /// Values held for the stream, and the autofocus trigger.
    let live: LibcameraLiveControls
    /// The controls core's backend: `zoom_absolute` → `ScalerCrop`, `auto_exposure_bias` → `ExposureValue`.
    let controls: LibcameraControls
    /// The live view's `preview-width` (nil without a live view): a second stream that wide
    /// is asked for it, whose frames go to `viewfinder` (docs/libcamera.md#two-streams).
    let liveViewWidth: Int?
    let viewfinder = ViewfinderFrames()

    init(_ choice: LibcameraChoice, liveViewWidth: Int?) {
        self.choice = choice
        self.liveViewWidth = liveViewWidth
        let list = (try? choice.libcamera.controls(of: choice.camera.id)) ?? []
        live = LibcameraLiveControls(controls: list)
        controls = LibcameraControls(
            identity: choice.camera.id, controls: list, cropMaximum: choice.camera.scalerCropMaximum, sink: live)
    }

    var frameStream: FrameStreamOpener {
        .libcamera(choice.libcamera, id: choice.camera.id, controls: live, liveViewWidth: liveViewWidth, viewfinder: viewfinder)
    }

    /// Where the live view's frames will come from, for the start-up line: what the stream
    /// will ask (``LibcameraStreamPlan``) and what the camera says to it, at `width`×`height`.
    func liveViewStream(width: Int?, height: Int?) -> LiveViewStream {
        choice.libcamera.liveViewStream(of: choice.camera.id, width: width, height: height, liveViewWidth: liveViewWidth)
    }
}

/// How the daemon gets its camera: at start, or when one is plugged in later; the
/// controls stage and the action runner that go with it.
struct CameraSetup: Sendable {
    let config: Config
    let loop: IOLoop
    let logger: Logger
    /// Where the actions' outcomes go: every sink (docs/architecture.md#events-and-sinks).
    let events: EventFanOut
    /// The camera libcamera drives, when it drives one: photos, videos, the live view and
    /// (without a V4L2 camera for controls) the controls come from it.
    var libcamera: LibcameraSource? = nil

    private var configuration: CameraSession.Configuration {
        .init(camera: config.daemon.camera ?? .automatic, onExternalChange: config.daemon.followExternalChanges ? .follow : .restore)
    }

    /// The configured (or first suitable) camera, if it is there now.
    func openAtStart() -> CameraSession? {
        guard config.daemon.camera != nil else { return nil }
        do {
            return try CameraSession(configuration, loop: loop, logger: logger)
        } catch {
            // With `backend = "libcamera"` and no V4L2 camera named, libcamera's camera gives the
            // controls (docs/libcamera.md): a missing V4L2 one is no error then.
            if config.daemon.cameraBackend == .libcamera && config.daemon.camera == .automatic {
                logger.info("no V4L2 camera for controls; libcamera's camera gives them: \(error)")
                return nil
            }
            logger.warning("no camera for controls (waiting for one): \(error)")
            events.emit(.error(ErrorReport("camera: \(error) (waiting for one)", code: "camera-missing", time: monotonicNow())))
            return nil
        }
    }

    /// Waits (on udev, no polling) for a video device that makes a usable camera.
    func waitForCamera(found: @escaping @Sendable (CameraSession) async -> Void) -> Task<Void, Never> {
        let (loop, logger, configuration) = (self.loop, self.logger, self.configuration)
        return followVideoAdditions("camera hotplug") { _ in
            guard let session = try? CameraSession(configuration, loop: loop, logger: logger) else { return true }
            await found(session)
            return false
        }
    }

    /// Follows a separate capture device (`[camera] capture-device`) coming back: `added`
    /// runs for every udev `video4linux` addition of its node, so a capture stream that an
    /// unplug ended starts again by itself. Nil without one: the controls camera's return
    /// restarts the session, and the stream with it.
    func watchCaptureDevice(added: @escaping @Sendable () async -> Void) -> Task<Void, Never>? {
        guard let configured = config.daemon.captureDevice else { return nil }
        let logger = self.logger
        return followVideoAdditions("the capture device's hotplug") { device in
            // A `/dev/v4l/by-id/…` link is made again before udev announces the node.
            let target = realpath(configured, nil).map { p in
                defer { free(p) }; return String(cString: p)
            }
            guard device.node == configured || device.node == target else { return true }
            logger.info("capture device is back", metadata: ["v4l2.device": "\(configured)"])
            await added()
            return true
        }
    }

    /// A task that hands every udev `video4linux` addition to `body` until it returns false.
    private func followVideoAdditions(
        _ what: String, _ body: @escaping @Sendable (UdevVideoDevice) async -> Bool
    ) -> Task<Void, Never> {
        let (loop, logger) = (self.loop, self.logger)
        return Task {
            let monitor: UdevVideoMonitor
            let events: AsyncStream<UdevVideoEvent>
            do {
                (monitor, events) = try UdevVideoMonitor.start(on: loop)
            } catch {
                logger.warning("cannot follow \(what): \(error)")
                return
            }
            defer { monitor.stop() }
            for await event in events {
                guard case .added(let device) = event else { continue }
                if await !body(device) { return }
            }
        }
    }

    func controlsStage(for session: CameraSession) -> CameraControlsStage {
        controlsStage(camera: session.camera)
    }

    func controlsStage(camera: any CameraBackend) -> CameraControlsStage {
        let stateFile = ControlStateFile()
        let remembered = (try? stateFile?.load()) ?? nil
        let stage = CameraControlsStage(
            camera: camera, configuration: config.daemon.controlsConfiguration,
            rememberedControl: remembered, controls: config.daemon.controls)
        // Called on the input thread: the file is written by the saver's own thread.
        let saver = stateFile.map { ControlStateSaver(file: $0, logger: logger) }
        stage.onCurrentControl = { name in saver?.remember(name) }
        return stage
    }

    /// Photos and videos from the libcamera camera, else the configured capture device, else
    /// the camera; `continuing` the runner it replaces (its countdowns and timelapses go on).
    func actionRunner(for session: CameraSession?, continuing previous: ActionRunner? = nil) -> ActionRunner {
        let d = config.daemon
        // A libcamera camera is named by its id in the capture stream's messages.
        let captureDevice = libcamera?.choice.camera.id ?? d.captureDevice ?? session?.camera.devicePath
        let (events, logger) = (self.events, self.logger)
        let capture = captureDevice.map { d.capture(devicePath: $0) }
        // The capture stream photos, videos and the live view take their frames from; the
        // runner starts and stops it (docs/architecture.md#seams, the frame source).
        let frames = capture?.captureStream(
            opener: libcamera?.frameStream ?? .v4l2, logger: logger,
            onError: { error in
                let what = error.code == .frameRateNotAvailable ? "capture stream runs at another rate" : "capture stream failed"
                logger.info("\(what)", metadata: ["error": "\(error)"])
                events.emit(.failed(.recording(.camera(error)), press: nil), at: monotonicNow())
            })
        return ActionRunner(
            configuration: ActionsConfiguration(capture: capture, bindings: d.bindings, hooks: d.hooks, sound: d.sound),
            frames: frames, logger: logger, continuing: previous,
            onOutcome: { outcome in events.emit(outcome, at: monotonicNow()) })
    }
}
