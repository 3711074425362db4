import Actions
import Booth
import ConfigFile
import OutputDevices
import Testing

/// `[handlers.X]` booth keys and `[outputs.NAME]` (docs/configuration.md): every range at
/// both ends, and errors naming file, line and key.
@Suite struct BoothConfigTests {
    func binding(_ text: String) throws -> BoothBinding {
        try Config.parse("[handlers.primary]\n" + text, file: "b.toml").daemon.primary.booth
    }

    func error(_ text: String) -> String {
        do {
            _ = try Config.parse(text, file: "b.toml")
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func countdownRangeEnds() throws {
        #expect(try binding("countdown = 0\n").countdown == 0)
        #expect(try binding("countdown = 60\n").countdown == 60)
        #expect(error("[handlers.primary]\n\ncountdown = 61\n") == "b.toml:3: handlers.primary.countdown must be between 0 and 60, not 61")
        #expect(error("[handlers.primary]\ncountdown = -1\n") == "b.toml:2: handlers.primary.countdown must be between 0 and 60, not -1")
    }

    @Test func burstRangeEnds() throws {
        #expect(try binding("burst = 1\n") == BoothBinding(burst: 1))
        let b = try binding("burst = 50\nburst-before = 49\n")
        #expect(b.burst == 50 && b.burstBefore == 49)
        #expect(try binding("burst = 5\nburst-before = 0\n").burstBefore == 0)
        #expect(error("[handlers.primary]\nburst = 0\n") == "b.toml:2: handlers.primary.burst must be between 1 and 50, not 0")
        #expect(error("[handlers.primary]\nburst = 51\n") == "b.toml:2: handlers.primary.burst must be between 1 and 50, not 51")
        #expect(
            error("[handlers.primary]\nburst = 5\nburst-before = 5\n")
                == "b.toml:3: handlers.primary.burst-before must be between 0 and 4, not 5")
    }

    @Test func timelapseRangeEnds() throws {
        #expect(try binding("timelapse = 0.1\n").timelapse == 100_000)
        #expect(try binding("timelapse = 86400\n").timelapse == 86_400_000_000)
        #expect(
            error("[handlers.primary]\ntimelapse = 0.09\n").hasPrefix(
                "b.toml:2: handlers.primary.timelapse must be between 0.1 and 86400 seconds"))
        #expect(
            error("[handlers.primary]\ntimelapse = 86401\n").hasPrefix(
                "b.toml:2: handlers.primary.timelapse must be between 0.1 and 86400 seconds"))
    }

    @Test func outputsParseIntoTheirTargetsAndRules() throws {
        let d = try Config.parse(
            """
            [outputs.flash]
            chip = "gpiochip0"
            line = 17
            active-low = true
            follow = "shot"
            pulse = 0.001
            [outputs.busy]
            led = "input3::capslock"
            follow = "countdown"
            [outputs.relay]
            chip = "gpiochip1"
            line = "RELAY"
            follow = "began"
            pulse = 10
            """, file: "o.toml"
        ).daemon
        #expect(
            d.outputs == [
                OutputConfiguration(name: "busy", target: .led("input3::capslock"), rule: .countdown),
                OutputConfiguration(
                    name: "flash", target: .gpio(chip: "gpiochip0", line: .offset(17), activeLow: true), rule: .pulseAtShot(length: 1_000)),
                OutputConfiguration(
                    name: "relay", target: .gpio(chip: "gpiochip1", line: .label("RELAY"), activeLow: false),
                    rule: .pulseAtBegan(length: 10_000_000)),
            ])
    }

    @Test func badOutputsNameFileLineAndKey() {
        #expect(
            error("[outputs.a]\nled = \"x\"\nline = 3\n")
                == "b.toml:3: outputs.a.line is for GPIO lines; this output is the LED \"x\" (remove one)")
        #expect(
            error("[outputs.a]\nfollow = \"shot\"\n") == "b.toml:1: outputs.a needs led = \"NAME\" or chip = \"gpiochip0\" with line = N")
        #expect(
            error("[outputs.a]\nchip = \"gpiochip0\"\nline = 1024\n") == "b.toml:3: outputs.a.line must be between 0 and 1023, not 1024")
        #expect(
            error("[outputs.a]\nled = \"x\"\nfollow = \"session\"\npulse = 0.2\n")
                == "b.toml:4: outputs.a.pulse is for follow = \"shot\" or \"began\", not \"session\"")
        #expect(
            error("[outputs.a]\nled = \"x\"\npulse = 10.5\n").hasPrefix("b.toml:3: outputs.a.pulse must be between 0.001 and 10 seconds"))
        #expect(error("[outputs.a]\nled = \"x\"\nfollow = \"flash\"\n").hasPrefix("b.toml:3: outputs.a.follow must be one of"))
        #expect(error("[outputs.a]\nled = \"x\"\ncolour = 1\n").hasPrefix("b.toml:3: unknown key \"colour\" in [outputs.a]"))
    }
}
