import EvcaptureTesting
import Capture
import Vocabulary
import Foundation
import Testing
import ConfigFile
import Actions
import Camera
import Frames

@Suite struct ConfigTests {
    @Test func anEmptyConfigIsTheDefaults() throws {
        let c = try Config.parse("", file: "empty.toml")
        #expect(c.capture == CaptureCoreSettings())
        #expect(c.capture.holdThreshold == .milliseconds(500))
        #expect(c.capture.doubleClickWindow == .milliseconds(300))
        #expect(!c.capture.doubleClickEnabled && !c.capture.hasSecondaryHandler)
        #expect(c.devices.isEmpty)
    }

    @Test func everySettingIsRead() throws {
        let c = try Config.parse(
            """
            # evcapture config
            [capture]
            hold-threshold = 0.75
            double-click = true
            double-click-window = 1   # integers are seconds too
            secondary-handler = true

            [devices."AB Shutter3"]
            kind = "shutter"
            grab = false
            roles = { KEY_ENTER = "primary", KEY_VOLUMEUP = "slider+1" }

            [devices.knob.roles]
            KEY_MUTE = "light-press"
            REL_DIAL = "slider:counter"
            """, file: "full.toml")
        #expect(
            c.capture
                == CaptureCoreSettings(
                    holdThreshold: .milliseconds(750), doubleClickEnabled: true, doubleClickWindow: .seconds(1),
                    hasSecondaryHandler: true))
        #expect(
            c.overrides(forDevice: "AB Shutter3")
                == RoleOverrides(
                    kind: .shutter, codes: [.enter: CodeRole(.primary), .volumeUp: CodeRole(.slider, step: 1)],
                    dedicated: false))
        #expect(
            c.overrides(forDevice: "knob")
                == RoleOverrides(codes: [.mute: CodeRole(.lightPress), .relDial: CodeRole(.slider, reading: .counter)]))
        #expect(c.overrides(forDevice: "gpio-keys") == nil)
    }

    /// Each bad config and the exact error: file, line, problem.
    static let bad: [(String, String)] = [
        ("[capture]\nhold-threshold = 0.5\nhold-threshold = 0.6\n", "bad.toml:3:"),  // TOML syntax: parser's line
        ("[capture\n", "bad.toml:1:"),
        (
            "[capture]\n\nhold-treshold = 0.5\n",
            "bad.toml:3: unknown key \"hold-treshold\" in [capture] (known: hold-threshold, double-click, double-click-window, secondary-handler)"
        ),
        (
            "# top\n\n[camra]\nx = 1\n",
            "bad.toml:3: unknown key \"camra\" (known: capture, devices, camera, output, handlers, hooks, sound, socket, controls, session, mqtt, http, rtsp, outputs)"
        ),
        (
            "# top\n\n[camera]\nx = 1\n",
            "bad.toml:4: unknown key \"x\" in [camera] (known: device, capture-device, external-changes, width, height, stream, photo-frame, pre-roll, ring-seconds, ring-memory, idle-stop, fps, backend, libcamera-camera, pixel-format)"
        ),
        (
            "[camera]\nexternal-changes = \"ignore\"\n",
            "bad.toml:2: camera.external-changes must be \"follow\" or \"restore\", not \"ignore\""
        ),
        ("[output]\njpeg-quality = 101\n", "bad.toml:2: output.jpeg-quality must be between 1 and 100, not 101"),
        // docs/configuration.md#handlers: an explicit false beside the table is a contradiction, not a precedence
        (
            "[capture]\nsecondary-handler = false\n\n[handlers.secondary]\nclick = \"none\"\n",
            "bad.toml:2: capture.secondary-handler = false, but [handlers.secondary] (line 4) installs a secondary handler: remove one of them"
        ),
        ("[session]\nmode = \"manual\"\n", "bad.toml:2: session.mode must be one of \"always\", \"launch\", not \"manual\""),
        ("[session]\nlaunch-button = \"REL_X\"\n", "bad.toml:2: session.launch-button must be a key name like KEY_CAMERA, not \"REL_X\""),
        ("[session]\nidle-stop = 3601\n", "bad.toml:2: session.idle-stop must be more than 0 and at most 3600 seconds, not 3601"),
        ("[camera]\nstream = \"sometimes\"\n", "bad.toml:2: camera.stream must be one of \"always\", \"on-press\", not \"sometimes\""),
        ("[camera]\nphoto-frame = \"click\"\n", "bad.toml:2: camera.photo-frame must be one of \"press\", \"release\", not \"click\""),
        ("[camera]\npre-roll = -0.5\n", "bad.toml:2: camera.pre-roll must be 0 and at most 3600 seconds, not -0.5"),
        (
            "[camera]\nring-seconds = 1\npre-roll = 1.5\n",
            "bad.toml:3: camera.pre-roll must be at most camera.ring-seconds (1.0): the ring keeps no more"
        ),
        ("[camera]\nring-memory = 3\n", "bad.toml:2: camera.ring-memory must be between 4 and 4096, not 3"),
        ("[camera]\nring-memory = 4097\n", "bad.toml:2: camera.ring-memory must be between 4 and 4096, not 4097"),
        ("[camera]\nidle-stop = 0\n", "bad.toml:2: camera.idle-stop must be more than 0 and at most 3600 seconds, not 0"),
        // [camera] fps: 1…240, whole or fractional, a number.
        ("[camera]\nfps = 0.99\n", "bad.toml:2: camera.fps must be a number of frames per second between 1 and 240, not 0.99"),
        ("[camera]\nfps = 0\n", "bad.toml:2: camera.fps must be a number of frames per second between 1 and 240, not 0"),
        ("[camera]\nwidth = 640\n\nfps = 241\n", "bad.toml:4: camera.fps must be a number of frames per second between 1 and 240, not 241"),
        ("[camera]\nfps = -25\n", "bad.toml:2: camera.fps must be a number of frames per second between 1 and 240, not -25"),
        ("[camera]\nfps = \"25\"\n", "bad.toml:2: camera.fps must be a number of frames per second between 1 and 240, not \"25\""),
        ("[camera]\nfps = nan\n", "bad.toml:2: camera.fps must be a number of frames per second between 1 and 240, not nan"),
        ("[handlers.primary]\nclick = \"video\"\n", "bad.toml:2: handlers.primary.click must be one of \"photo\", \"none\", not \"video\""),
        (
            "\n[[hooks]]\nargv = \"touch /tmp/x\"\n",
            "bad.toml:3: hooks[0].argv must be a list of strings, not \"touch /tmp/x\": a hook runs a program without a shell; write argv = [\"touch\", \"/tmp/x\"]"
        ),
        (
            "[[hooks]]\nargv = [\"/bin/true\"]\n\n[[hooks]]\nname = \"log\"\nargv = \"echo $EVCAPTURE_FILE >> /tmp/log\"\n",
            "bad.toml:6: hooks[1].argv must be a list of strings, not \"echo $EVCAPTURE_FILE >> /tmp/log\": a hook runs a program without a shell; write argv = [\"/bin/sh\", \"-c\", \"echo $EVCAPTURE_FILE >> /tmp/log\"] (only if it needs the shell's syntax)"
        ),
        (
            "[[hooks]]\nargv = [\"/bin/true\"]\n[[hooks]]\nargv = [\"/bin/true\"]\non = [\"clik\"]\n",
            "bad.toml:5: hooks[1].on: unknown trigger \"clik\" (use began, ended, cancelled, click, long-press, double-click, photo, video, countdown)"
        ),
        ("[[hooks]]\nargv = [\"/bin/true\"]\ntimeout = \"10s\"\n", "bad.toml:3: hooks[0].timeout must be a number of seconds, not \"10s\""),
        ("[[hooks]]\nargv = [\"/bin/true\", 3]\n", "bad.toml:2: hooks[0].argv must be a list of strings, not [\"/bin/true\", 3]"),
        // Probably milliseconds: refused with the valid range and what was meant.
        (
            "[capture]\nhold-threshold = 500\n",
            "bad.toml:2: capture.hold-threshold must be between 0.05 and 10 seconds, not 500 (seconds, not milliseconds: for 500 ms write 0.5)"
        ),
        (
            "[capture]\ndouble-click-window = 300\n",
            "bad.toml:2: capture.double-click-window must be between 0.05 and 5 seconds, not 300 (seconds, not milliseconds: for 300 ms write 0.3)"
        ),
        (
            "[controls]\nidle-timeout = 3000\n",
            "bad.toml:2: controls.idle-timeout must be between 0.1 and 600 seconds, not 3000 (seconds, not milliseconds: for 3000 ms write 3)"
        ),
        ("[controls]\nadjusting-timeout = 0.01\n", "bad.toml:2: controls.adjusting-timeout must be between 0.05 and 60 seconds, not 0.01"),
        ("[capture]\nhold-threshold = 30\n", "bad.toml:2: capture.hold-threshold must be between 0.05 and 10 seconds, not 30"),
        (
            "[output]\ndirectory = \"photos\"\n",
            "bad.toml:2: output.directory must be an absolute path (or start with ~/), not \"photos\": a relative one would depend on where the daemon starts"
        ),
        (
            "[output]\ndirectory = \"~pi/photos\"\n",
            "bad.toml:2: output.directory \"~pi/photos\": only ~/ (this user's home) is expanded, not ~user; write an absolute path"
        ),
        ("[output]\ndirectory = 7\n", "bad.toml:2: output.directory must be a string, not 7"),
        (
            "[devices.shutter]\nhas = [\"KEY_VOLUMEDWN\"]\n",
            "bad.toml:2: devices.shutter.has: unknown event code \"KEY_VOLUMEDWN\" (use kernel names like KEY_VOLUMEDOWN, REL_X)"
        ),
        (
            "[devices.shutter]\nhas = \"KEY_VOLUMEDOWN\"\n",
            "bad.toml:2: devices.shutter.has must be a list of strings, not \"KEY_VOLUMEDOWN\""
        ),
        (
            "[[hooks]]\nargv = [\"/bin/true\"]\non = [\"clik\"]\n",
            "bad.toml:3: hooks[0].on: unknown trigger \"clik\" (use began, ended, cancelled, click, long-press, double-click, photo, video, countdown)"
        ),
        // Headers that aborted TOMLKit's C++ parser before the check (found by fuzzing).
        ("[~]\nx = 1\n", "bad.toml:1: a table header must start with a key (letters, digits, - and _, or a quoted key), not '~'"),
        (
            "a = 1\n[\n",
            "bad.toml:2: a table header must start with a key (letters, digits, - and _, or a quoted key), not the end of the line"
        ),
        // Values that failed an assertion inside toml++ (found by fuzzing): a parse error now.
        ("[controls]\norder = [\"zoom\", }\n", "bad.toml:2:"),
        ("[capture]\n\nhold-threshold = [\n  # none\n}\n", "bad.toml:5:"),
        ("[devices.knob]\nroles = { KEY_MUTE = [}] }\n", "bad.toml:2:"),
        ("[sound]\nplay = \"loud\"\n", "bad.toml:2: sound.play must be \"default\", \"off\" or an absolute path to a WAV file"),
        (
            "[controls]\norder = [\"zoom\", \"focus\"]\n",
            "bad.toml:2: controls.order: unknown control \"focus\" (use \"zoom\", \"exposure-bias\")"
        ),
        (
            "[devices.knob]\nvendor = \"xyz\"\n",
            "bad.toml:2: devices.knob.vendor must be a 16-bit id, as an integer or a hex string like \"077d\", not \"xyz\""
        ),
        (
            "[capture]\nhold-threshold = \"half a second\"\n",
            "bad.toml:2: capture.hold-threshold must be a number of seconds, not \"half a second\""
        ),
        ("[capture]\nhold-threshold = 0\n", "bad.toml:2: capture.hold-threshold must be between 0.05 and 10 seconds, not 0"),
        ("[capture]\ndouble-click = \"yes\"\n", "bad.toml:2: capture.double-click must be true or false, not \"yes\""),
        ("capture = 3\n", "bad.toml:1: capture must be a table, not 3"),
        (
            "[devices.\"gpio-keys\"]\nkind = \"shutter\"\nroles = { KEY_ENTER = \"shutter\" }\n",
            "bad.toml:3: unknown role \"shutter\" for KEY_ENTER (use primary, secondary, light-press, slider, slider+1, slider-1, slider:counter, slider:rate or ignore)"
        ),
        (
            "[devices.jog]\nvendor = \"0b33\"\n\nroles = { KEY_ENTER = \"slider:counter\" }\n",
            "bad.toml:4: KEY_ENTER=slider:counter: only relative axes (REL_*) can be position counters"
        ),
        (
            "[devices.jog.roles]\nREL_DIAL = \"slider:counter\"\nREL_WHEEL = \"slider+1\"\n",
            "bad.toml:3: REL_WHEEL=slider+1: a step per press needs a key (KEY_*, BTN_*)"
        ),
        (
            "[devices.\"gpio-keys\".roles]\nKEY_ENTER = \"primary\"\nKEY_NOPE = \"primary\"\n",
            "bad.toml:3: unknown event code \"KEY_NOPE\" (use kernel names like KEY_VOLUMEUP, REL_DIAL)"
        ),
        (
            "[devices.remote]\n\n\nkind = \"camera\"\n",
            "bad.toml:4: unknown device kind \"camera\" (use one of buttons, shutter, headset, knob, dial, encoder, keyboard, pointer, ignore)"
        ),
        ("[devices.remote]\ngrab = 1\n", "bad.toml:2: devices.remote.grab must be true or false, not 1"),
        (
            "[devices.remote]\ncolour = \"red\"\n",
            "bad.toml:2: unknown key \"colour\" in [devices.remote] (known: kind, grab, roles, name, node, bus, vendor, product, uniq, has)"
        ),
    ]

    @Test(arguments: bad)
    func badConfigsNameFileLineAndProblem(text: String, expected: String) {
        Self.expectError(text, expected)
    }

    /// The same configs with Windows line endings: the same errors on the same lines. (In a
    /// String "\r\n" is one Character, so splitting on "\n" once made a CRLF file one line.)
    @Test(arguments: bad)
    func crlfConfigsNameTheSameLines(text: String, expected: String) {
        #expect(text.contains("\n") && !text.contains("\r"))
        Self.expectError(text.replacing("\n", with: "\r\n"), expected)
    }

    static func expectError(_ text: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try Config.parse(text, file: "bad.toml")
            Issue.record("parsed: \(text.debugDescription)", sourceLocation: sourceLocation)
        } catch {
            // Syntax errors carry the parser's own words after the line; ours are exact.
            if expected.hasSuffix(":") {
                #expect(
                    error.description.hasPrefix(expected + " Error while parsing"), "\(error.description)", sourceLocation: sourceLocation)
            } else {
                #expect(error.description == expected, sourceLocation: sourceLocation)
            }
        }
    }

    /// Aborted the process inside toml++ once: the table header check saw a CRLF file as
    /// one line, so a bad header after line 1 reached the parser's assertion.
    @Test func aBadHeaderAfterACRLFLineIsAnErrorNotAnAbort() {
        let header = "bad.toml:%d: a table header must start with a key (letters, digits, - and _, or a quoted key), not "
        Self.expectError("a = 1\r\n[ ~]\r\n", String(format: header, 2) + "'~'")
        Self.expectError("# comment\r\n\r\n[[+]]\r\nx = 1\r\n", String(format: header, 3) + "'+'")
        Self.expectError("a = 1\r\n[\r\n", String(format: header, 2) + "the end of the line")
        Self.expectError("a = [\r\n  1,\r\n]\r\n[\r~]\r\n", String(format: header, 4) + "'\\r'")
        // a lone \r is no line break for the parser either: its own error, on its line
        Self.expectError("\r\n\r\na = 1\r\r\n[capture]\r\n", "bad.toml:3:")
    }

    /// Every short text over the characters that matter (brackets, braces, commas, quotes, line
    /// breaks of both kinds, a comment) parses or throws ConfigError; one that reaches an
    /// assertion in the parser aborts this test process instead (`a=[}` and `\r\n[~` did).
    @Test func noShortTextAbortsTheParser() {
        let alphabet: [String] = ["[", "]", "{", "}", ",", " ", "~", "\r", "\n", "a", "=", "1", "\"", "#"]
        var texts = [""]
        for _ in 1...5 {
            texts = texts.flatMap { t in alphabet.map { t + $0 } }
            for t in texts {
                do { _ = try Config.parse(t, file: "short.toml") } catch {
                    #expect(error.line >= 1 && error.line <= 6, "\(t.debugDescription): \(error)")
                }
            }
        }
    }

    @Test func anUnreadableConfigNamesTheFile() {
        #expect(throws: ConfigError.self) { try Config.load(path: "/nonexistent/evcapture.toml") }
        do {
            _ = try Config.load(path: "/nonexistent/evcapture.toml")
        } catch {
            #expect(error.description.hasPrefix("/nonexistent/evcapture.toml: cannot read"))
        }
    }

    @Test func aLaunchedSessionIsConfigured() throws {
        #expect(try Config.parse("", file: "t.toml").daemon.session == SessionPolicy())
        let s = try Config.parse("[session]\nmode = \"launch\"\nlaunch-button = \"KEY_VOLUMEUP\"\nidle-stop = 3600\n", file: "t.toml")
            .daemon.session
        #expect(s == SessionPolicy(mode: .launch, launchButton: .volumeUp, idleStop: .seconds(3600)))
    }

    @Test func fpsIsAskedForOnlyWhenGivenAndTakesBothEndsOfItsRange() throws {
        #expect(try Config.parse("", file: "t.toml").daemon.capture.framesPerSecond == nil)  // the driver's rate
        #expect(try Config.parse("[camera]\nfps = 1\n", file: "t.toml").daemon.capture.framesPerSecond == 1)
        #expect(try Config.parse("[camera]\nfps = 240\n", file: "t.toml").daemon.capture.framesPerSecond == 240)
        #expect(try Config.parse("[camera]\nfps = 7.5\n", file: "t.toml").daemon.capture.framesPerSecond == 7.5)
        #expect(try Config.parse("[camera]\r\nfps = 29.97\r\n", file: "t.toml").daemon.capture.framesPerSecond == 29.97)
    }

    @Test func theCaptureStreamDefaultsToTheRunningRingAndThePress() throws {
        let d = try Config.parse("[camera]\npre-roll = 0\n", file: "t.toml").daemon
        #expect(d.capture.streamMode == .always && d.capture.photoMoment == .press && d.capture.preRoll == .zero)
        #expect(d.capture.ring == RingLimits() && d.capture.streamIdleStop == .seconds(10))
        #expect(try Config.parse("[camera]\nring-memory = 4\n", file: "t.toml").daemon.capture.ring.memoryBytes == 4 << 20)
    }

    @Test func daemonSectionsAreRead() throws {
        let c = try Config.parse(
            """
            [camera]
            device = "/dev/v4l/by-id/usb-cam-video-index0"
            capture-device = "/dev/video2"
            external-changes = "follow"
            stream = "on-press"
            photo-frame = "release"
            ring-seconds = 4
            pre-roll = 4
            ring-memory = 4096
            idle-stop = 30
            [output]
            directory = "/srv/evcapture"
            photo-name = "shot-{press}.jpg"
            jpeg-quality = 80
            [handlers.primary]
            click = "photo"
            long-press = "none"
            [handlers.secondary]
            click = "none"
            long-press = "video"
            [[hooks]]
            name = "log"
            argv = ["/usr/bin/logger", "-t", "evcapture"]
            on = ["click", "photo"]
            actions = ["primary"]
            timeout = 2
            [sound]
            play = "off"
            [socket]
            path = "/run/evc.sock"
            [controls]
            order = ["exposure-bias"]
            steps-per-range = 20
            [devices.knob]
            vendor = "077d"
            product = 0x0410
            kind = "knob"
            """, file: "full.toml")
        let d = c.daemon
        #expect(d.camera == .path("/dev/v4l/by-id/usb-cam-video-index0"))
        #expect(d.captureDevice == "/dev/video2")
        #expect(d.followExternalChanges)
        #expect(d.capture.streamMode == .onPress && d.capture.photoMoment == .release && d.capture.streamIdleStop == .seconds(30))
        #expect(d.capture.ring == RingLimits(seconds: 4, memoryBytes: 4096 << 20) && d.capture.preRoll == .seconds(4))
        #expect(d.outputDirectory == "/srv/evcapture")
        #expect(d.capture.jpegQuality == 80)
        #expect(d.primary == ActionBinding(photoOn: .click, videoOnLongPress: false))
        #expect(d.secondary == ActionBinding(photoOn: nil, videoOnLongPress: true))
        #expect(c.capture.hasSecondaryHandler)
        #expect(
            d.hooks == [
                ExecHook(
                    name: "log", argv: ["/usr/bin/logger", "-t", "evcapture"], on: [.click, .photo], actions: [.primary],
                    timeout: .seconds(2))
            ])
        #expect(d.sound == .off)
        #expect(d.socketPath == "/run/evc.sock")
        #expect(d.controls == ["exposure-bias"])
        #expect(d.controlsConfiguration.stepsPerRange == 20)
        let powermate = DeviceDescription(name: "Griffin PowerMate", bus: .usb, vendor: 0x077d, product: 0x0410)
        let other = DeviceDescription(name: "Griffin PowerMate", bus: .usb, vendor: 0x077d, product: 0x0411)
        #expect(c.overrides(for: powermate, node: "/dev/input/event5")?.kind == .knob)
        #expect(c.overrides(for: other, node: "/dev/input/event5") == nil)
    }
}

/// What the README's full example sets (that every example parses: DocsConfigTests).
@Suite struct ReadmeConfigTests {
    @Test func theREADMEsFullExampleSetsTheCaptureStreamAsItSays() throws {
        let blocks = try DocsConfigTests.tomlBlocks("README.md").map(\.text)
        #expect(blocks.count >= 2)
        let full = try Config.parse(try #require(blocks.first { $0.contains("[capture]") }), file: "README.md")
        #expect(
            full.daemon.capture.preRoll == .milliseconds(500) && full.daemon.capture.streamMode == .always
                && full.daemon.session.mode == .always)
    }
}

/// What a rule matches, where photos go, the default socket (docs/configuration.md).
@Suite struct ConfigFirstHourTests {
    @Test func aRuleWithoutMatchKeysSaysItMatchesByLabel() throws {
        let c = try Config.parse(
            "# rig\n\n[devices.shutter]\nkind = \"shutter\"\n\n[devices.knob]\nname = \"rotary@5\"\n", file: "rig.toml")
        #expect(
            c.warnings.map(\.description) == [
                "rig.toml:3: warning: [devices.shutter] has no match keys (name, node, bus, vendor, product, uniq, has): it applies only to a device named \"shutter\"; add name = \"...\" (as evcapture devices shows it) or other match keys to say which device"
            ])
        #expect(c.deviceRuleLines == ["shutter": 3, "knob": 6])
        #expect(c.overrides(forDevice: "shutter")?.kind == .shutter)
    }

    /// The Raspberry Pi: a shutter button and an encoder's push switch are both gpio-keys
    /// devices with the same name; `has` tells them apart by the key each sends.
    @Test func hasTellsApartDevicesThatShareAName() throws {
        let c = try Config.parse(
            """
            [devices.shutter]
            bus = "0019"
            has = ["KEY_VOLUMEDOWN"]
            roles = { KEY_VOLUMEDOWN = "primary" }

            [devices.push]
            bus = "0019"
            has = ["KEY_ENTER"]
            roles = { KEY_ENTER = "light-press" }
            """, file: "pi.toml")
        #expect(c.warnings.isEmpty)
        let button = DeviceDescription(name: "", bus: BusType(rawValue: 0x19), codes: [.volumeDown])
        let push = DeviceDescription(name: "", bus: BusType(rawValue: 0x19), codes: [.enter])
        #expect(c.overrides(for: button, node: "/dev/input/event1")?.codes[.volumeDown] == CodeRole(.primary))
        #expect(c.overrides(for: push, node: "/dev/input/event2")?.codes[.enter] == CodeRole(.lightPress))
    }

    @Test func theOutputDirectoryIsAbsoluteOrHomeRelative() throws {
        let home = ["HOME": "/home/pi"]
        #expect(
            try Config.parse("[output]\ndirectory = \"~/Pictures/rig/\"\n", file: "c.toml", environment: home).daemon.outputDirectory
                == "/home/pi/Pictures/rig")
        #expect(try Config.parse("[output]\ndirectory = \"~\"\n", file: "c.toml", environment: home).daemon.outputDirectory == "/home/pi")
        #expect(
            try Config.parse("[output]\ndirectory = \"/srv/evcapture\"\n", file: "c.toml", environment: [:]).daemon.outputDirectory
                == "/srv/evcapture")
        // A service user has no home: ~ means nothing there.
        for env in [[:], ["HOME": "/"]] {
            #expect {
                _ = try Config.parse("[output]\n\ndirectory = \"~/photos\"\n", file: "c.toml", environment: env)
            } throws: { error in
                "\(error)".hasPrefix("c.toml:3: output.directory \"~/photos\": ~ has no meaning here (HOME is ")
                    && "\(error)".hasSuffix("as for a system service); write an absolute path such as \"/srv/evcapture\"")
            }
        }
    }

    @Test func theDefaultSocketIsPerServiceOrPerUser() {
        #expect(
            DaemonSettings.defaultSocketPath(["RUNTIME_DIRECTORY": "/run/evcapture", "XDG_RUNTIME_DIR": "/run/user/1000"])
                == "/run/evcapture/evcapture.sock")
        #expect(DaemonSettings.defaultSocketPath(["XDG_RUNTIME_DIR": "/run/user/1000"]) == "/run/user/1000/evcapture.sock")
        #expect(DaemonSettings.defaultSocketPath([:]) == nil)
        #expect(
            DaemonSettings.monitorSocketCandidates(["XDG_RUNTIME_DIR": "/run/user/1000"]) == [
                "/run/user/1000/evcapture.sock", "/run/evcapture/evcapture.sock",
            ])
        #expect(DaemonSettings.monitorSocketCandidates([:]) == ["/run/evcapture/evcapture.sock"])
    }
}
