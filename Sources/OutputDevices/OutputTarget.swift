import Booth
import CGPIOD
#if canImport(Glibc)
import Glibc
#endif
import LinuxIO

/// One configured output (`[outputs.NAME]`, docs/booth.md#outputs): what it drives and what
/// it follows.
public struct OutputConfiguration: Sendable, Hashable {
    public enum Target: Sendable, Hashable {
        /// An LED class device: `/sys/class/leds/NAME/brightness`.
        case led(String)
        /// A GPIO line on a chip (`gpiochip0`, or a path under /dev), by offset or label.
        case gpio(chip: String, line: Line, activeLow: Bool)
    }
    public enum Line: Sendable, Hashable, CustomStringConvertible {
        case offset(Int)
        case label(String)
        public var description: String {
            switch self {
            case .offset(let n): "line \(n)"
            case .label(let l): "line \"\(l)\""
            }
        }
    }
    public var name: String
    public var target: Target
    public var rule: OutputRule

    public init(name: String, target: Target, rule: OutputRule) {
        self.name = name
        self.target = target
        self.rule = rule
    }
}

/// Where an output's level is written: opened once, written on the outputs' thread, released
/// by ``close()`` (and, for GPIO lines, by the kernel when the process dies).
protocol OutputWriter: AnyObject {
    func set(_ on: Bool) throws(SystemError)
    func close()
}

/// An LED class device: its `brightness` file, written `max_brightness` or 0.
final class LEDWriter: OutputWriter {
    private let fd: Int32
    private let on: String
    private let path: String

    init(name: String, root: String = "/sys/class/leds") throws(SystemError) {
        let dir = root + "/" + name
        path = dir + "/brightness"
        let max = (try? readWholeFile(dir + "/max_brightness"))?.trimmingSpaces ?? "1"
        on = Int(max).map { $0 > 0 ? String($0) : "1" } ?? "1"
        fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError(errno: errno, context: "opening \(path)") }
    }

    func set(_ level: Bool) throws(SystemError) {
        // sysfs takes the value from offset 0 of each write (a newline ends it).
        _ = lseek(fd, 0, SEEK_SET)
        try writeAll(fd, (level ? on : "0") + "\n")
    }

    func close() { _ = Glibc.close(fd) }
}

/// A GPIO line requested as an output through libgpiod (the character device, never sysfs),
/// with its 1.x or 2.x API: CGPIOD hides which.
final class GPIOWriter: OutputWriter {
    private let output: OpaquePointer

    init(chip name: String, line: OutputConfiguration.Line, activeLow: Bool, consumer: String) throws(SystemError) {
        var stage = EVC_GPIO_CHIP
        let opened: OpaquePointer? =
            switch line {
            case .offset(let n):
                evc_gpio_output_open(name, Int32(clamping: max(0, n)), nil, activeLow ? 1 : 0, consumer, &stage)
            case .label(let l): evc_gpio_output_open(name, -1, l, activeLow ? 1 : 0, consumer, &stage)
            }
        guard let opened else {
            let e = errno
            switch stage {
            case EVC_GPIO_CHIP: throw SystemError(errno: e, context: "opening GPIO chip \(name)")
            case EVC_GPIO_LINE: throw SystemError(errno: e == 0 ? ENOENT : e, context: "finding \(line) on \(name)")
            default:
                throw SystemError(
                    errno: e,
                    context: "requesting \(line) of \(name) as an output" + (e == EBUSY ? " (another program holds it)" : ""))
            }
        }
        output = opened
    }

    func set(_ level: Bool) throws(SystemError) {
        guard evc_gpio_output_set(output, level ? 1 : 0) == 0 else {
            throw SystemError(errno: errno, context: "setting GPIO line")
        }
    }

    func close() { evc_gpio_output_close(output) }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}
