import Capture
import Vocabulary
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import TOMLKit
import Actions
import Recording
import Camera
import MQTT
import Rig
import LiveView
import Movie
import RTSP
import OutputDevices

/// Everything `evcapture run` reads from the config beyond the capture core and roles.
public struct DaemonSettings: Sendable {
    /// The controls camera; nil (`device = "none"`): capture events and hooks only.
    public var camera: CameraSelector? = .automatic
    /// Where photos and videos come from; nil: the controls camera.
    public var captureDevice: String?

    /// Whether V4L2 gives the camera, so that `backend = "auto"` leaves libcamera alone
    /// (docs/libcamera.md#the-backend-choice): one was open at start, or `device` names a node
    /// (waited for when it is not there yet), or `device = "none"`, or `capture-device` is set.
    public func v4l2GivesTheCamera(openAtStart: Bool) -> Bool {
        openAtStart || captureDevice != nil || camera != .automatic
    }
    public var followExternalChanges = false
    /// `[camera] backend` and the libcamera camera chosen by id (docs/libcamera.md).
    public var cameraBackend = CameraBackendSetting.auto
    public var libcameraCamera: String?
    /// Photos and videos as `[camera]` and `[output]` configure them: size, rate, quality,
    /// file names, the stream mode, the photo's moment, pre-roll and the ring
    /// (docs/behaviour.md#the-moment-of-the-press). The reader writes straight into it;
    /// its device and directory are the daemon's to resolve (``captureDevice``,
    /// ``outputDirectory``), and ``capture(devicePath:)`` fills them in.
    public var capture = CaptureSettings(devicePath: "", outputDirectory: "")
    /// When the capture session runs: always, or launched by a button until idle (`[session]`).
    public var session = SessionPolicy()
    public var outputDirectory: String?
    public var primary = ActionBinding.default
    /// nil: no secondary handler (secondary presses act as primary).
    public var secondary: ActionBinding?
    public var hooks: [ExecHook] = []
    public var sound = SoundSetting.builtIn(directory: ShutterSound.defaultDirectory())
    public var socketPath: String?
    /// System controls in order (`zoom`, `exposure-bias`); empty: no controls.
    public var controls = ["zoom", "exposure-bias"]
    public var controlsConfiguration = ControlsConfiguration()
    /// The broker connection (`[mqtt]`); nil: no network socket at all.
    public var mqtt: MQTTConnectionSettings?
    /// The station in its rig (`[mqtt]`: station, prefix, groups, fan-out); set with `mqtt`.
    public var rig: RigSettings?
    /// The live view's HTTP server (`[http]`); nil: no server, no listening socket.
    public var http: LiveViewSettings?
    /// The camera's live H.264 over RTSP (`[rtsp]`); nil: no server, GStreamer never loaded.
    public var rtsp: RTSPSettings?
    /// LEDs and GPIO lines following the booth's events (`[outputs.NAME]`, docs/booth.md#outputs).
    public var outputs: [OutputConfiguration] = []

    public init() {}

    /// The capture settings for photos and videos from `devicePath`, into the configured
    /// directory (or the default one).
    public func capture(devicePath: String) -> CaptureSettings {
        var s = capture
        s.devicePath = devicePath
        s.outputDirectory = outputDirectory ?? Self.defaultOutputDirectory()
        return s
    }

    /// The bindings of the buttons: `primary`, and `secondary` when it has a handler.
    public var bindings: [CaptureAction: ActionBinding] {
        var b: [CaptureAction: ActionBinding] = [.primary: primary]
        if let secondary { b[.secondary] = secondary }
        return b
    }

    /// The daemon's socket when neither `--socket` nor `[socket] path` names one: in the
    /// runtime directory systemd made for the service (`$RUNTIME_DIRECTORY`, i.e.
    /// /run/evcapture), else in the user's (`$XDG_RUNTIME_DIR`); nil without either.
    public static func defaultSocketPath(_ env: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let d = env["RUNTIME_DIRECTORY"], !d.isEmpty {
            return (d.split(separator: ":").first.map(String.init) ?? d) + "/evcapture.sock"
        }
        if let d = env["XDG_RUNTIME_DIR"], !d.isEmpty { return d + "/evcapture.sock" }
        return nil
    }

    /// Where `evcapture monitor` looks for a daemon, in order: this user's own daemon
    /// (`$XDG_RUNTIME_DIR/evcapture.sock`), then the service's (/run/evcapture/evcapture.sock).
    public static func monitorSocketCandidates(_ env: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        var paths: [String] = []
        if let d = env["XDG_RUNTIME_DIR"], !d.isEmpty { paths.append(d + "/evcapture.sock") }
        paths.append("/run/evcapture/evcapture.sock")
        return paths
    }

    /// Where photos go when nothing is configured: `$EVCAPTURE_OUTPUT`, systemd's
    /// `$STATE_DIRECTORY`, `$XDG_PICTURES_DIR/evcapture`, else `~/Pictures/evcapture`.
    public static func defaultOutputDirectory(_ env: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let d = env["EVCAPTURE_OUTPUT"], !d.isEmpty { return d }
        if let d = env["STATE_DIRECTORY"], !d.isEmpty { return d.split(separator: ":").first.map(String.init) ?? d }
        if let d = env["XDG_PICTURES_DIR"], !d.isEmpty { return d + "/evcapture" }
        return (env["HOME"] ?? "/tmp") + "/Pictures/evcapture"
    }
}
