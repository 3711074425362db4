import EvcaptureTesting
import Capture
import Evdev
import Foundation
import Testing
import ConfigFile
import Actions
import Camera

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
        #expect(c.overrides(forDevice: "knob") == RoleOverrides(codes: [.mute: CodeRole(.lightPress)]))
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
            "bad.toml:3: unknown key \"camra\" (known: capture, devices, camera, output, handlers, hooks, sound, socket, controls, mqtt)"
        ),
        (
            "# top\n\n[camera]\nx = 1\n",
            "bad.toml:4: unknown key \"x\" in [camera] (known: device, capture-device, external-changes, width, height)"
        ),
        ("[camera]\nexternal-changes = \"ignore\"\n", "bad.toml:2: camera.external-changes must be \"follow\" or \"restore\", not \"ignore\""),
        ("[output]\njpeg-quality = 101\n", "bad.toml:2: output.jpeg-quality must be between 1 and 100, not 101"),
        ("[handlers.primary]\nclick = \"video\"\n", "bad.toml:2: handlers.primary.click must be one of \"photo\", \"none\", not \"video\""),
        ("\n[[hooks]]\nargv = \"touch /tmp/x\"\n", "bad.toml:3: hooks.argv must be a list of strings"),
        ("[[hooks]]\nargv = [\"/bin/true\"]\non = [\"clik\"]\n", "bad.toml:3: hooks[0].on: unknown trigger \"clik\" (use began, ended, cancelled, click, long-press, double-click, photo, video)"),
        // Headers that aborted TOMLKit's C++ parser before the check (found by fuzzing).
        ("[~]\nx = 1\n", "bad.toml:1: a table header must start with a key (letters, digits, - and _, or a quoted key), not '~'"),
        ("a = 1\n[\n", "bad.toml:2: a table header must start with a key (letters, digits, - and _, or a quoted key), not the end of the line"),
        ("[sound]\nplay = \"loud\"\n", "bad.toml:2: sound.play must be \"default\", \"off\" or an absolute path to a WAV file"),
        ("[controls]\norder = [\"zoom\", \"focus\"]\n", "bad.toml:2: controls.order: unknown control \"focus\" (use \"zoom\", \"exposure-bias\")"),
        ("[devices.knob]\nvendor = \"xyz\"\n", "bad.toml:2: devices.knob.vendor must be a 16-bit id, as an integer or a hex string like \"077d\""),
        ("[capture]\nhold-threshold = \"half a second\"\n", "bad.toml:2: capture.hold-threshold must be a number of seconds"),
        ("[capture]\nhold-threshold = 0\n", "bad.toml:2: capture.hold-threshold must be more than 0 and at most 3600 seconds, not 0.0"),
        ("[capture]\ndouble-click = \"yes\"\n", "bad.toml:2: capture.double-click must be true or false"),
        ("capture = 3\n", "bad.toml:1: capture must be a table"),
        (
            "[devices.\"gpio-keys\"]\nkind = \"shutter\"\nroles = { KEY_ENTER = \"shutter\" }\n",
            "bad.toml:3: unknown role \"shutter\" for KEY_ENTER (use primary, secondary, light-press, slider, slider+1, slider-1 or ignore)"
        ),
        (
            "[devices.\"gpio-keys\".roles]\nKEY_ENTER = \"primary\"\nKEY_NOPE = \"primary\"\n",
            "bad.toml:3: unknown event code \"KEY_NOPE\" (use kernel names like KEY_VOLUMEUP, REL_DIAL)"
        ),
        (
            "[devices.remote]\n\n\nkind = \"camera\"\n",
            "bad.toml:4: unknown device kind \"camera\" (use one of buttons, shutter, headset, knob, dial, encoder, keyboard, pointer, ignore)"
        ),
        ("[devices.remote]\ngrab = 1\n", "bad.toml:2: devices.remote.grab must be true or false"),
        ("[devices.remote]\ncolour = \"red\"\n", "bad.toml:2: unknown key \"colour\" in [devices.remote] (known: kind, grab, roles, name, node, bus, vendor, product, uniq)"),
    ]

    @Test(arguments: bad)
    func badConfigsNameFileLineAndProblem(text: String, expected: String) {
        #expect(throws: ConfigError.self) { try Config.parse(text, file: "bad.toml") }
        do {
            _ = try Config.parse(text, file: "bad.toml")
        } catch {
            // Syntax errors carry the parser's own words after the line; ours are exact.
            if expected.hasSuffix(":") {
                #expect(error.description.hasPrefix(expected + " Error while parsing"), "\(error.description)")
            } else {
                #expect(error.description == expected)
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

    @Test func daemonSectionsAreRead() throws {
        let c = try Config.parse(
            """
            [camera]
            device = "/dev/v4l/by-id/usb-cam-video-index0"
            capture-device = "/dev/video2"
            external-changes = "follow"
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
        #expect(d.outputDirectory == "/srv/evcapture")
        #expect(d.jpegQuality == 80)
        #expect(d.primary == ActionBinding(photoOn: .click, videoOnLongPress: false))
        #expect(d.secondary == ActionBinding(photoOn: nil, videoOnLongPress: true))
        #expect(c.capture.hasSecondaryHandler)
        #expect(d.hooks == [ExecHook(name: "log", argv: ["/usr/bin/logger", "-t", "evcapture"], on: [.click, .photo], actions: ["primary"], timeout: .seconds(2))])
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
