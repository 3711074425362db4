import Actions
import Booth
import OutputDevices
import TOMLKit

extension ConfigReader {
    /// A handler's booth keys (docs/booth.md).
    static let boothKeys = ["countdown", "burst", "burst-before", "timelapse"]

    func booth(_ t: TOMLTable, path p: [String]) throws(ConfigError) -> BoothBinding {
        var b = BoothBinding()
        if let c = try int(t, "countdown", path: p, in: 0...Countdown.maximumSeconds) { b.countdown = c }
        if let n = try int(t, "burst", path: p, in: 1...BurstSelection<Int>.maximumCount) { b.burst = n }
        if let n = try int(t, "burst-before", path: p, in: 0...(b.burst - 1)) { b.burstBefore = n }
        let range = TimelapseSchedule.intervalRange
        if let s = try seconds(t, "timelapse", path: p, in: Double(range.lowerBound) / 1e6...Double(range.upperBound) / 1e6) {
            b.timelapse = Int64((s / .microseconds(1)).rounded())
        }
        return b
    }

    /// `[outputs.NAME]`: an LED (`led`) or a GPIO line (`chip`, `line`, `active-low`), and
    /// what it follows (`follow`, `pulse`).
    func outputs(_ table: TOMLTable) throws(ConfigError) -> [OutputConfiguration] {
        var out: [OutputConfiguration] = []
        for name in table.keys.sorted() {
            let p = ["outputs", name]
            guard let t = try self.table(table, name, path: ["outputs"]) else { continue }
            try checkKeys(t, path: p, allowed: ["led", "chip", "line", "active-low", "follow", "pulse"])
            let target: OutputConfiguration.Target
            if let led = try string(t, "led", path: p) {
                for key in ["chip", "line", "active-low"] where t[key] != nil {
                    throw error(p + [key], "outputs.\(name).\(key) is for GPIO lines; this output is the LED \"\(led)\" (remove one)")
                }
                guard !led.isEmpty, !led.contains("/" as Character) else {
                    throw error(p + ["led"], "outputs.\(name).led must be a name under /sys/class/leds, not \"\(led)\"")
                }
                target = .led(led)
            } else if let chip = try string(t, "chip", path: p) {
                let line: OutputConfiguration.Line
                if let v = t["line"], let label = v.string {
                    line = .label(label)
                } else if let n = try int(t, "line", path: p, in: 0...1023) {
                    line = .offset(n)
                } else {
                    throw error(
                        p, "outputs.\(name) needs line = N (an offset on \(chip); on a Raspberry Pi the BCM number) or a line label")
                }
                target = .gpio(chip: chip, line: line, activeLow: try bool(t, "active-low", path: p) ?? false)
            } else {
                throw error(p, "outputs.\(name) needs led = \"NAME\" or chip = \"gpiochip0\" with line = N")
            }
            let follow = try oneOf(t, "follow", path: p, ["session", "recording", "countdown", "shot", "began"]) ?? "shot"
            let range = OutputRule.pulseRange
            let pulseSeconds = try seconds(t, "pulse", path: p, in: Double(range.lowerBound) / 1e6...Double(range.upperBound) / 1e6)
            if pulseSeconds != nil && follow != "shot" && follow != "began" {
                throw error(p + ["pulse"], "outputs.\(name).pulse is for follow = \"shot\" or \"began\", not \"\(follow)\"")
            }
            let pulse = Int64((pulseSeconds ?? .milliseconds(200)) / .microseconds(1))
            let rule: OutputRule =
                switch follow {
                case "session": .session
                case "recording": .recording
                case "countdown": .countdown
                case "began": .pulseAtBegan(length: pulse)
                default: .pulseAtShot(length: pulse)
                }
            out.append(OutputConfiguration(name: name, target: target, rule: rule))
        }
        return out
    }
}
