import Capture
import Vocabulary
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import TOMLKit
import Actions
import Camera
import MQTT
import Rig
import Movie
import Frames
import Recording

extension ConfigReader {
    func int(_ t: TOMLTable, _ key: String, path: [String], in range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        guard let v = t[key] else { return nil }
        guard let i = v.int else { throw error(path + [key], "\(dotted(path + [key])) must be an integer, not \(shown(v))") }
        guard range.contains(i) else {
            throw error(path + [key], "\(dotted(path + [key])) must be between \(range.lowerBound) and \(range.upperBound), not \(i)")
        }
        return i
    }

    func strings(_ t: TOMLTable, _ key: String, path: [String]) throws(ConfigError) -> [String]? {
        guard let v = t[key] else { return nil }
        guard let array = v.array else { throw error(path + [key], "\(dotted(path + [key])) must be a list of strings, not \(shown(v))") }
        var out: [String] = []
        for item in array {
            guard let s = item.string else {
                throw error(path + [key], "\(dotted(path + [key])) must be a list of strings, not \(shown(v))")
            }
            out.append(s)
        }
        return out
    }

    /// A string that must be one of `allowed`.
    func oneOf(_ t: TOMLTable, _ key: String, path: [String], _ allowed: [String]) throws(ConfigError) -> String? {
        guard let s = try string(t, key, path: path) else { return nil }
        guard allowed.contains(s) else {
            throw error(
                path + [key], "\(dotted(path + [key])) must be one of \(allowed.map { "\"\($0)\"" }.joined(separator: ", ")), not \"\(s)\"")
        }
        return s
    }

    func hex16(_ t: TOMLTable, _ key: String, path: [String]) throws(ConfigError) -> UInt16? {
        guard let v = t[key] else { return nil }
        if let i = v.int, (0...0xffff).contains(i) { return UInt16(i) }
        if let s = v.string {
            let digits = s.hasPrefix("0x") ? String(s.dropFirst(2)) : s
            if let n = UInt16(digits, radix: 16) { return n }
        }
        throw error(
            path + [key], "\(dotted(path + [key])) must be a 16-bit id, as an integer or a hex string like \"077d\", not \(shown(v))")
    }

    /// `[output]`'s video keys: format, encoder, CRF or bitrate, keyframe interval.
    func video(_ output: TOMLTable, path p: [String], into d: inout DaemonSettings) throws(ConfigError) {
        if let f = try oneOf(output, "video-format", path: p, VideoFormat.allCases.map(\.rawValue)) {
            d.capture.videoFormat = VideoFormat(rawValue: f)!
        }
        if let e = try string(output, "video-encoder", path: p) {
            guard e == "auto" || H264Settings.knownEncoders.contains(e) else {
                let known = (["auto"] + H264Settings.knownEncoders).map { "\"\($0)\"" }.joined(separator: ", ")
                throw error(p + ["video-encoder"], "output.video-encoder must be one of \(known), not \"\(e)\"")
            }
            d.capture.h264.encoder = e == "auto" ? .automatic : .named(e)
        }
        let crf = try int(output, "video-crf", path: p, in: 0...51)
        let kbits = try int(output, "video-bitrate", path: p, in: 100...100_000)
        if crf != nil, kbits != nil {
            throw error(p + ["video-bitrate"], "output.video-crf and output.video-bitrate both set: give one (constant quality, or kbit/s)")
        }
        if let crf { d.capture.h264.rateControl = .quality(crf) }
        if let kbits { d.capture.h264.rateControl = .bitrate(kbits * 1000) }
        if let s = try seconds(output, "video-keyframe-interval", path: p, in: 0.1...1) { d.capture.h264.keyframeInterval = s }
    }

    /// The daemon's sections: `[camera]`, `[output]`, `[handlers]`, `[[hooks]]`, `[sound]`,
    /// `[socket]`, `[controls]`.
    func daemonSettings(_ table: TOMLTable, capture: inout CaptureCoreSettings) throws(ConfigError) -> DaemonSettings {
        var d = DaemonSettings()
        if let camera = try self.table(table, "camera", path: []) {
            let p = ["camera"]
            try checkKeys(
                camera, path: p,
                allowed: [
                    "device", "capture-device", "external-changes", "width", "height", "stream", "photo-frame", "pre-roll",
                    "ring-seconds", "ring-memory", "idle-stop", "fps", "backend", "libcamera-camera", "pixel-format",
                ])
            try libcameraSettings(camera, path: p, into: &d)
            if let f = try oneOf(camera, "pixel-format", path: p, StreamSettings.pixelFormatChoices.map(\.key)) {
                d.capture.pixelFormats = StreamSettings.pixelFormatChoices.first { $0.key == f }!.value
                // libcamera's streams are its own formats (docs/libcamera.md): this key is V4L2's.
                guard f == "auto" || d.cameraBackend != .libcamera else {
                    throw error(
                        p + ["pixel-format"], "camera.pixel-format \"\(f)\" is for V4L2 cameras, but camera.backend is \"libcamera\"")
                }
            }
            if let m = try oneOf(camera, "stream", path: p, StreamMode.allCases.map(\.rawValue)) {
                d.capture.streamMode = StreamMode(rawValue: m)!
            }
            if let m = try oneOf(camera, "photo-frame", path: p, CaptureSettings.PhotoMoment.allCases.map(\.rawValue)) {
                d.capture.photoMoment = CaptureSettings.PhotoMoment(rawValue: m)!
            }
            if let s = try seconds(camera, "ring-seconds", path: p) { d.capture.ring.seconds = Double(s / .milliseconds(1)) / 1000 }
            if let mb = try int(camera, "ring-memory", path: p, in: 4...4096) { d.capture.ring.memoryBytes = mb << 20 }
            if let s = try seconds(camera, "pre-roll", path: p, allowingZero: true) {
                guard Double(s / .milliseconds(1)) / 1000 <= d.capture.ring.seconds else {
                    throw error(
                        p + ["pre-roll"],
                        "camera.pre-roll must be at most camera.ring-seconds (\(d.capture.ring.seconds)): the ring keeps no more")
                }
                d.capture.preRoll = s
            }
            if let s = try seconds(camera, "idle-stop", path: p) { d.capture.streamIdleStop = s }
            if let dev = try string(camera, "device", path: p) {
                d.camera = dev == "auto" ? .automatic : dev == "none" ? nil : .path(dev)
            }
            d.captureDevice = try string(camera, "capture-device", path: p)
            if let e = try string(camera, "external-changes", path: p) {
                guard e == "follow" || e == "restore" else {
                    throw error(p + ["external-changes"], "camera.external-changes must be \"follow\" or \"restore\", not \"\(e)\"")
                }
                d.followExternalChanges = e == "follow"
            }
            d.capture.width = try int(camera, "width", path: p, in: 16...8192)
            d.capture.height = try int(camera, "height", path: p, in: 16...8192)
            if let v = camera["fps"] {
                // Whole or fractional (7.5, 29.97): what `v4l2-ctl --list-formats-ext` lists.
                guard let fps = v.int.map(Double.init) ?? v.double, (1...240).contains(fps) else {
                    throw error(p + ["fps"], "camera.fps must be a number of frames per second between 1 and 240, not \(shown(v))")
                }
                d.capture.framesPerSecond = fps
            }
        }
        if let output = try self.table(table, "output", path: []) {
            let p = ["output"]
            try checkKeys(
                output, path: p,
                allowed: [
                    "directory", "photo-name", "video-name", "jpeg-quality", "video-format", "video-encoder", "video-crf",
                    "video-bitrate", "video-keyframe-interval",
                ])
            try video(output, path: p, into: &d)
            if let dir = try string(output, "directory", path: p) { d.outputDirectory = try outputDirectory(dir, path: p + ["directory"]) }
            var names: [String: FileNamePattern] = [:]
            for key in ["photo-name", "video-name"] {
                if let s = try string(output, key, path: p) {
                    do {
                        names[key] = try FileNamePattern(s)
                    } catch {
                        throw self.error(p + [key], "output.\(key): \(error)")
                    }
                }
            }
            if let photo = names["photo-name"] { d.capture.photoPattern = photo }
            // Without a video-name, the format's own default (`….mp4`, `….avi`).
            d.capture.videoPattern = names["video-name"] ?? d.capture.videoFormat.defaultPattern
            if let q = try int(output, "jpeg-quality", path: p, in: 1...100) { d.capture.jpegQuality = q }
            if let name = names["video-name"], let named = VideoFormat(fileName: name.pattern), named != d.capture.videoFormat {
                throw error(
                    p + ["video-name"],
                    "output.video-name \"\(name.pattern)\" ends in \(named.fileExtension), but output.video-format is \"\(d.capture.videoFormat.rawValue)\": end it in \(d.capture.videoFormat.fileExtension) or set video-format = \"\(named.rawValue)\""
                )
            }
        }
        if d.capture.stream.wantsH264 && d.capture.videoFormat == .avi {
            throw error(
                ["camera", "pixel-format"],
                "camera.pixel-format \"h264\" cannot be recorded as output.video-format \"avi\" (AVI holds MJPEG): use video-format = \"mp4\", or another pixel-format"
            )
        }
        if let handlers = try self.table(table, "handlers", path: []) {
            let p = ["handlers"]
            try checkKeys(handlers, path: p, allowed: ["primary", "secondary"])
            if let primary = try self.table(handlers, "primary", path: p) { d.primary = try handler(primary, path: p + ["primary"]) }
            if let secondary = try self.table(handlers, "secondary", path: p) {
                // A table installs a secondary handler; an explicit `false` beside it is a
                // contradiction the user must resolve, not a precedence (docs/configuration.md#handlers).
                if table["capture"]?.table?["secondary-handler"]?.bool == false {
                    throw error(
                        ["capture", "secondary-handler"],
                        "capture.secondary-handler = false, but [handlers.secondary] (line \(lines.line(of: p + ["secondary"]))) installs a secondary handler: remove one of them"
                    )
                }
                d.secondary = try handler(secondary, path: p + ["secondary"])
                capture.hasSecondaryHandler = true
            }
        }
        if capture.hasSecondaryHandler && d.secondary == nil { d.secondary = .default }
        if let hooks = table["hooks"] {
            guard let array = hooks.array else {
                throw error(["hooks"], "hooks must be an array of tables: [[hooks]], not \(shown(hooks))")
            }
            for (i, item) in array.enumerated() {
                let p = ["hooks", "[\(i)]"]
                guard let h = item.table else { throw error(p, "hooks[\(i)] must be a table: [[hooks]], not \(shown(item))") }
                try checkKeys(h, path: p, allowed: ["name", "argv", "on", "actions", "timeout"])
                if let v = h["argv"], let line = v.string {
                    throw error(
                        p + ["argv"],
                        "hooks[\(i)].argv must be a list of strings, not \(shown(v)): a hook runs a program without a shell; write argv = \(Self.argvSuggestion(line))"
                    )
                }
                guard let argv = try strings(h, "argv", path: p), !argv.isEmpty, !argv[0].isEmpty else {
                    throw error(p, "hooks[\(i)] needs argv = [\"/path/to/program\", \"arg\", ...] (a list, never a shell string)")
                }
                var on: Set<ActionTrigger.Kind> = [.click]
                if let names = try strings(h, "on", path: p) {
                    on = []
                    for n in names {
                        guard let k = ActionTrigger.Kind(rawValue: n) else {
                            let all = ActionTrigger.Kind.allCases.map(\.rawValue).joined(separator: ", ")
                            throw error(p + ["on"], "hooks[\(i)].on: unknown trigger \"\(n)\" (use \(all))")
                        }
                        on.insert(k)
                    }
                }
                var actions: Set<CaptureAction>?
                if let a = try strings(h, "actions", path: p) {
                    actions = []
                    for x in a {
                        guard let action = CaptureAction(rawValue: x) else {
                            throw error(p + ["actions"], "hooks[\(i)].actions: \"\(x)\" is not primary or secondary")
                        }
                        actions?.insert(action)
                    }
                }
                let timeout = try seconds(h, "timeout", path: p) ?? .seconds(10)
                d.hooks.append(ExecHook(name: try string(h, "name", path: p), argv: argv, on: on, actions: actions, timeout: timeout))
            }
        }
        if let sound = try self.table(table, "sound", path: []) {
            let p = ["sound"]
            try checkKeys(sound, path: p, allowed: ["play"])
            if let s = try string(sound, "play", path: p) {
                switch s {
                case "default": d.sound = .builtIn(directory: ShutterSound.defaultDirectory())
                case "off": d.sound = .off
                default:
                    guard s.hasPrefix("/") else {
                        throw error(p + ["play"], "sound.play must be \"default\", \"off\" or an absolute path to a WAV file")
                    }
                    d.sound = .file(s)
                }
            }
        }
        if let session = try self.table(table, "session", path: []) {
            let p = ["session"]
            try checkKeys(session, path: p, allowed: ["mode", "launch-button", "idle-stop"])
            if let m = try oneOf(session, "mode", path: p, SessionPolicy.Mode.allCases.map(\.rawValue)) {
                d.session.mode = SessionPolicy.Mode(rawValue: m)!
            }
            if let name = try string(session, "launch-button", path: p) {
                guard let code = EventCode(name: name), code.type == .key else {
                    throw error(p + ["launch-button"], "session.launch-button must be a key name like KEY_CAMERA, not \"\(name)\"")
                }
                d.session.launchButton = code
            }
            if let s = try seconds(session, "idle-stop", path: p) { d.session.idleStop = s }
        }
        if let socket = try self.table(table, "socket", path: []) {
            let p = ["socket"]
            try checkKeys(socket, path: p, allowed: ["path"])
            d.socketPath = try string(socket, "path", path: p)
        }
        if let controls = try self.table(table, "controls", path: []) {
            let p = ["controls"]
            try checkKeys(controls, path: p, allowed: ["order", "steps-per-range", "idle-timeout", "adjusting-timeout", "acceleration"])
            if let order = try strings(controls, "order", path: p) {
                for c in order where c != "zoom" && c != "exposure-bias" {
                    throw error(p + ["order"], "controls.order: unknown control \"\(c)\" (use \"zoom\", \"exposure-bias\")")
                }
                d.controls = order
            }
            if let s = try int(controls, "steps-per-range", path: p, in: 2...10_000) { d.controlsConfiguration.stepsPerRange = s }
            if let s = try seconds(controls, "idle-timeout", path: p, in: 0.1...600) { d.controlsConfiguration.idleTimeout = s }
            if let s = try seconds(controls, "adjusting-timeout", path: p, in: 0.05...60) { d.controlsConfiguration.adjustingTimeout = s }
            if let a = try bool(controls, "acceleration", path: p) { d.controlsConfiguration.acceleration = a ? SliderAcceleration() : nil }
        }
        if let outputs = try self.table(table, "outputs", path: []) { d.outputs = try self.outputs(outputs) }
        return d
    }

    /// `[output] directory`: absolute, or `~` / `~/…` expanded from `HOME` when it names a
    /// home (a service user often has none: HOME unset or `/`). Relative paths would depend on
    /// the directory the daemon was started in, so they are refused.
    func outputDirectory(_ dir: String, path: [String]) throws(ConfigError) -> String {
        var expanded = dir
        if dir == "~" || dir.hasPrefix("~/") {
            guard let home = environment["HOME"], home.hasPrefix("/"), home != "/" else {
                throw error(
                    path,
                    "output.directory \"\(dir)\": ~ has no meaning here (HOME is \(environment["HOME"].map { "\"\($0)\"" } ?? "not set"), as for a system service); write an absolute path such as \"/srv/evcapture\""
                )
            }
            expanded = home + dir.dropFirst()
        } else if dir.hasPrefix("~") {
            throw error(path, "output.directory \"\(dir)\": only ~/ (this user's home) is expanded, not ~user; write an absolute path")
        }
        guard expanded.hasPrefix("/") else {
            throw error(
                path,
                "output.directory must be an absolute path (or start with ~/), not \"\(dir)\": a relative one would depend on where the daemon starts"
            )
        }
        while expanded.count > 1 && expanded.hasSuffix("/") { expanded.removeLast() }
        return expanded
    }

    /// `argv = "touch /tmp/x"` → `["touch", "/tmp/x"]`; a line with shell syntax → `["/bin/sh", "-c", "…"]`.
    static func argvSuggestion(_ line: String) -> String {
        func quoted(_ word: some StringProtocol) -> String {
            let s = String(word)
            return "\"" + s.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
        }
        let shellSyntax = line.contains { "|&;<>()$`\\\"'*?[]#~{}".contains($0) }
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        if shellSyntax || words.isEmpty {
            return "[\"/bin/sh\", \"-c\", \(quoted(line))] (only if it needs the shell's syntax)"
        }
        return "[" + words.map { quoted($0) }.joined(separator: ", ") + "]"
    }

    private func handler(_ t: TOMLTable, path p: [String]) throws(ConfigError) -> ActionBinding {
        try checkKeys(t, path: p, allowed: ["click", "long-press"] + Self.boothKeys)
        var b = ActionBinding.default
        if let c = try oneOf(t, "click", path: p, ["photo", "none"]) { b.photoOn = c == "photo" ? .click : nil }
        if let l = try oneOf(t, "long-press", path: p, ["video", "none"]) { b.videoOnLongPress = l == "video" }
        b.booth = try booth(t, path: p)
        return b
    }
}

extension ConfigReader {
    /// `[mqtt]`: the broker connection and the station in its rig, with the status topic's
    /// birth (`online`) and will (`offline`) and the trigger subscriptions filled in.
    func mqtt(_ t: TOMLTable) throws(ConfigError) -> (MQTTConnectionSettings, RigSettings) {
        let p = ["mqtt"]
        try checkKeys(
            t, path: p,
            allowed: [
                "url", "username", "password-file", "ca-file", "station", "prefix", "groups", "fan-out", "keepalive", "offline-queue",
                "discovery", "discovery-prefix",
            ])
        guard let url = try string(t, "url", path: p) else {
            throw error(p, "[mqtt] needs url = \"mqtt://host:1883\" (or mqtts://host:8883)")
        }
        let broker: MQTTBroker
        do { broker = try MQTTBroker(url: url) } catch { throw self.error(p + ["url"], "mqtt.url: \(error)") }
        let caFile = try string(t, "ca-file", path: p)
        if caFile != nil && !broker.tls {
            throw error(p + ["ca-file"], "mqtt.ca-file is for mqtts:// URLs; \(broker) is not encrypted")
        }
        let username = try string(t, "username", path: p)
        let passwordFile = try string(t, "password-file", path: p)
        if passwordFile != nil && username == nil {
            throw error(p + ["password-file"], "mqtt.password-file needs mqtt.username")
        }
        for (key, value) in [("ca-file", caFile), ("password-file", passwordFile)] where value?.isEmpty == true {
            throw error(p + [key], "mqtt.\(key) is empty")
        }

        let station: String
        if let s = try string(t, "station", path: p) {
            station = s
        } else {
            station = Self.hostName()
        }
        if let problem = RigSettings.problem(withName: station) {
            throw error(
                p + ["station"],
                "mqtt.station \"\(station)\" \(problem)" + (t["station"] == nil ? " (it defaults to the host name; set station)" : ""))
        }
        if RigSettings.reservedNames.contains(station) {
            throw error(p + ["station"], "mqtt.station cannot be \"\(station)\" (a topic of the rig's own)")
        }
        let prefix = try string(t, "prefix", path: p) ?? "evcapture"
        if let problem = RigSettings.problem(withPrefix: prefix) {
            throw error(p + ["prefix"], "mqtt.prefix \"\(prefix)\" \(problem)")
        }
        let groups = try strings(t, "groups", path: p) ?? []
        for g in groups {
            if let problem = RigSettings.problem(withName: g) { throw error(p + ["groups"], "mqtt.groups: \"\(g)\" \(problem)") }
        }
        var fanOut = RigSettings.FanOut.none
        if let f = try string(t, "fan-out", path: p) {
            switch f {
            case "none": fanOut = .none
            case "all": fanOut = .all
            default:
                if let problem = RigSettings.problem(withName: f) {
                    throw error(p + ["fan-out"], "mqtt.fan-out must be \"none\", \"all\" or a group name; \"\(f)\" \(problem)")
                }
                fanOut = .group(f)
            }
        }
        // Home Assistant discovery: on unless `discovery = false`.
        var discoveryPrefix: String? = try string(t, "discovery-prefix", path: p) ?? HomeAssistantDiscovery.defaultPrefix
        if let d = discoveryPrefix, let problem = RigSettings.problem(withPrefix: d) {
            throw error(p + ["discovery-prefix"], "mqtt.discovery-prefix \"\(d)\" \(problem)")
        }
        if try bool(t, "discovery", path: p) == false {
            if t["discovery-prefix"] != nil {
                throw error(p + ["discovery-prefix"], "mqtt.discovery-prefix is set but discovery = false (remove one)")
            }
            discoveryPrefix = nil
        }
        let rig = RigSettings(station: station, prefix: prefix, groups: groups, fanOut: fanOut, discoveryPrefix: discoveryPrefix)
        let topics = RigTopics(rig)
        var connection = MQTTConnectionSettings(
            broker: broker, clientID: station, username: username, passwordFile: passwordFile, caFile: caFile,
            birth: topics.online(), will: topics.offline(),
            subscriptions: topics.triggerSubscriptions.map { (topic: $0, qos: QoS.atLeastOnce) })
        if let k = try int(t, "keepalive", path: p, in: 5...3600) { connection.keepalive = k }
        if let q = try int(t, "offline-queue", path: p, in: 0...1_000_000) { connection.offlineQueueLimit = q }
        return (connection, rig)
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        // Only the host's own label: a station name is one topic level.
        return String(cString: buffer).split(separator: ".").first.map(String.init) ?? ""
    }
}

extension ConfigReader {
    /// `backend` and `libcamera-camera` (docs/libcamera.md).
    func libcameraSettings(_ camera: TOMLTable, path p: [String], into d: inout DaemonSettings) throws(ConfigError) {
        if let b = try oneOf(camera, "backend", path: p, CameraBackendSetting.allCases.map(\.rawValue)) {
            d.cameraBackend = CameraBackendSetting(rawValue: b)!
        }
        if let id = try string(camera, "libcamera-camera", path: p) {
            guard !id.isEmpty, !id.utf8.contains(0) else {
                throw error(
                    p + ["libcamera-camera"],
                    "camera.libcamera-camera must be a libcamera camera id (see `evcapture controls`), not \"\(id)\"")
            }
            guard d.cameraBackend != .v4l2 else {
                throw error(p + ["libcamera-camera"], "camera.libcamera-camera names a libcamera camera, but camera.backend is \"v4l2\"")
            }
            d.libcameraCamera = id
        }
    }
}
