#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import Synchronization
import Vocabulary
import Recording

/// What a button does beyond reporting its events.
public struct ActionBinding: Sendable, Hashable {
    /// The trigger that takes a photo (default: a click); nil for none.
    public var photoOn: ActionTrigger.Kind?
    /// A long press records video from the hold threshold until `ended`/`cancelled`.
    public var videoOnLongPress: Bool
    /// What the photo trigger does beyond one photo: a countdown first, a burst, or a
    /// timelapse it starts and stops (docs/booth.md).
    public var booth: BoothBinding

    public init(photoOn: ActionTrigger.Kind? = .click, videoOnLongPress: Bool = true, booth: BoothBinding = BoothBinding()) {
        self.photoOn = photoOn
        self.videoOnLongPress = videoOnLongPress
        self.booth = booth
    }
    /// Click: photo; long press: video (the daemon's default: docs/behaviour.md#gestures).
    public static let `default` = ActionBinding()
    public static let none = ActionBinding(photoOn: nil, videoOnLongPress: false)
}

/// The shutter sound for headset presses.
public enum SoundSetting: Sendable, Hashable {
    case off
    /// The generated click (``ShutterSound``), written once to `directory`.
    case builtIn(directory: String)
    /// The user's own sound file.
    case file(String)
}

/// Everything the action runner does.
public struct ActionsConfiguration: Sendable {
    /// The camera and the output directory; nil: photo and video report `no-camera` errors.
    public var capture: CaptureSettings?
    /// Per action (`primary`, `secondary`); an action missing here does nothing but hooks.
    public var bindings: [CaptureAction: ActionBinding]

    /// What `trigger` sets off: `photo`, `video` and the names of the hooks it runs, in
    /// that order (the runner's rules; a replay reports them as skipped).
    public func planned(for trigger: ActionTrigger) -> [String] {
        let binding = trigger.action.flatMap { bindings[$0] } ?? .none
        var out: [String] = []
        if let photoOn = binding.photoOn, trigger.kind == photoOn { out.append("photo") }
        if binding.videoOnLongPress, trigger.kind == .longPress { out.append("video") }
        for hook in hooks where hook.matches(trigger) { out.append("hook " + hook.name) }
        return out
    }
    public var hooks: [ExecHook]
    public var sound: SoundSetting
    var soundPlayer: SoundPlayer
    /// Requests waiting per queue (photos, hooks, sounds) before new ones are dropped.
    public var queueLimit: Int
    /// Hooks running at the same time.
    var maxConcurrentHooks: Int

    public init(
        capture: CaptureSettings?, bindings: [CaptureAction: ActionBinding] = [.primary: .default, .secondary: .default],
        hooks: [ExecHook] = [], sound: SoundSetting = .builtIn(directory: ShutterSound.defaultDirectory()),
        soundPlayer: SoundPlayer = SoundPlayer(), queueLimit: Int = 8, maxConcurrentHooks: Int = 4
    ) {
        self.capture = capture
        self.bindings = bindings
        self.hooks = hooks
        self.sound = sound
        self.soundPlayer = soundPlayer
        self.queueLimit = queueLimit
        self.maxConcurrentHooks = maxConcurrentHooks
    }
}

/// Receives capture triggers. `handle` returns at once: it never waits for an action.
public protocol ActionTriggerSink: Sendable {
    func handle(_ trigger: ActionTrigger)
}
