#if canImport(Glibc)
import Glibc
#endif

/// How a control's value moves: the part of a control the slider arithmetic needs.
public enum ControlScale: Sendable, Hashable {
    /// Any value in a closed range; a slide settles on a prominent value it crosses.
    case continuous(range: ClosedRange<Double>, prominentValues: [Double])
    /// One of a sorted list of values.
    case discrete(values: [Double])
    /// An index into `count` titles; wraps around at the ends only when `wraps` is set.
    case index(count: Int, wraps: Bool)

    /// The smallest and largest value the scale allows.
    public var bounds: ClosedRange<Double> {
        switch self {
        case .continuous(let range, _): range
        case .discrete(let values): (values.first ?? 0)...(values.last ?? 0)
        case .index(let count, _): 0...Double(Swift.max(0, count - 1))
        }
    }

    /// The value `detents` slider steps away from `value` (docs/behaviour.md#slider-arithmetic).
    ///
    /// A continuous scale moves by `(max − min) / stepsPerRange` per detent, stopping on
    /// the first prominent value a detent crosses; a discrete scale moves to the neighbouring
    /// listed value; an index scale moves one index, wrapping only when configured.
    public func value(from value: Double, movedBy detents: Int, stepsPerRange: Int) -> Double {
        guard detents != 0 else { return clamped(value) }
        switch self {
        case .continuous(let range, let prominent):
            let step = (range.upperBound - range.lowerBound) / Double(Swift.max(1, stepsPerRange))
            var v = clamped(value)
            for _ in 0..<Swift.abs(detents) {
                let up = detents > 0
                let next = Swift.min(Swift.max(v + (up ? step : -step), range.lowerBound), range.upperBound)
                // The first prominent value strictly past v and not beyond next, in the direction of travel.
                let crossed = prominent.filter {
                    up ? ($0 > v + Self.epsilon && $0 <= next + Self.epsilon) : ($0 < v - Self.epsilon && $0 >= next - Self.epsilon)
                }
                if let p = up ? crossed.min() : crossed.max() {
                    v = p  // settled: exactly the prominent value
                } else {
                    v = next == range.lowerBound || next == range.upperBound ? next : Self.tidy(next)
                }
            }
            return v
        case .discrete(let values):
            guard !values.isEmpty else { return value }
            var i: Int
            if let exact = values.firstIndex(where: { Swift.abs($0 - value) <= Self.epsilon }) {
                i = exact + detents
            } else if detents > 0 {
                // Off the list (changed elsewhere): the first listed value above is one detent.
                i = (values.firstIndex { $0 > value } ?? values.count) + detents - 1
            } else {
                i = (values.lastIndex { $0 < value } ?? -1) + detents + 1
            }
            return values[Swift.min(Swift.max(i, 0), values.count - 1)]
        case .index(let count, let wraps):
            guard count > 0 else { return 0 }
            let i = Int(value.rounded()) + detents
            if wraps { return Double(((i % count) + count) % count) }
            return Double(Swift.min(Swift.max(i, 0), count - 1))
        }
    }

    /// `value` forced into the scale: clamped, and for discrete/index scales the nearest allowed value.
    public func clamped(_ value: Double) -> Double {
        switch self {
        case .continuous(let range, _):
            return Self.tidy(Swift.min(Swift.max(value, range.lowerBound), range.upperBound))
        case .discrete(let values):
            return values.min { Swift.abs($0 - value) < Swift.abs($1 - value) } ?? value
        case .index(let count, _):
            return Double(Swift.min(Swift.max(Int(value.rounded()), 0), Swift.max(0, count - 1)))
        }
    }

    /// Whether `value` is one the scale can hold (in range; on the list for discrete scales).
    public func allows(_ value: Double) -> Bool {
        switch self {
        case .continuous(let range, _):
            return value >= range.lowerBound - Self.epsilon && value <= range.upperBound + Self.epsilon
        case .discrete(let values):
            return values.contains { Swift.abs($0 - value) <= Self.epsilon }
        case .index(let count, _):
            return value == value.rounded() && value >= 0 && Int(value) < count
        }
    }

    static let epsilon = 1e-9

    /// Rounds away binary noise (1.0 + 5 × 0.08 = 1.4000000000000001 becomes 1.4) so values
    /// compare and print as a person expects; 9 decimals is far below any display format.
    public static func tidy(_ v: Double) -> Double {
        let t = (v * 1e9).rounded() / 1e9
        return t == 0 ? 0 : t
    }

    /// The values of a range with a fixed step (`min`, `min + step`, … up to `max`).
    public static func values(in range: ClosedRange<Double>, step: Double) -> [Double] {
        precondition(step > 0, "a discrete slider's step must be positive")
        let n = Int(((range.upperBound - range.lowerBound) / step + epsilon).rounded(.down))
        return (0...n).map { tidy(range.lowerBound + Double($0) * step) }
    }
}

/// What a control is bound to: the app's own action, or a camera control the session drives.
public enum ControlBinding: Sendable {
    /// An app-defined slider or picker: its action is all that happens.
    case app
    /// The system zoom slider: `zoom_absolute` of `camera`, shown as a factor (value / minimum).
    case systemZoom(any BoundCamera)
    /// The system exposure-bias slider: `auto_exposure_bias`, or emulated on the exposure time.
    case systemExposureBias(any BoundCamera)
    /// The system zoom slider of a camera without `zoom_absolute`: nothing is set on the
    /// camera; photos are cropped around the centre to 1/value of each side (digital zoom).
    case digitalZoom

    /// The camera this binding drives, if any.
    public var camera: (any BoundCamera)? {
        switch self {
        case .app, .digitalZoom: nil
        case .systemZoom(let c), .systemExposureBias(let c): c
        }
    }

    /// Zoom done in software on the photos (the camera has no zoom control).
    public var isDigitalZoom: Bool {
        if case .digitalZoom = self { return true }
        return false
    }

    /// `"zoom"` / `"exposure-bias"` for system bindings, for the one-per-camera rule.
    public var systemKind: String? {
        switch self {
        case .app: nil
        case .systemZoom, .digitalZoom: "zoom"
        case .systemExposureBias: "exposure-bias"
        }
    }
}

/// One camera control a person adjusts with the light press and the slider
/// (docs/behaviour.md#controls):
/// a continuous or discrete slider, an index picker, or a system zoom / exposure-bias slider.
public struct Control: Sendable {
    /// A stable name: the key in reports (`"zoom"`), in the state file and in the config.
    public var name: String
    public var title: String
    /// A symbol name for displays (SF Symbols style, e.g. `"plus.magnifyingglass"`).
    public var symbolName: String
    public var scale: ControlScale
    /// The current value; for pickers the index.
    public var value: Double
    /// A disabled control stays listed and visible but cannot be changed or selected.
    public var isEnabled: Bool
    /// `printf`-style format of the value for displays (`%.1f×`, `%+.1f EV`); pickers show titles.
    public var valueFormat: String
    /// A picker's titles, by index.
    public var titles: [String]
    public var binding: ControlBinding
    /// Called with each value a person sets; see `ControlAction` for where it runs.
    public var action: ControlAction?

    public init(
        name: String, title: String, symbolName: String, scale: ControlScale, value: Double,
        valueFormat: String = "%.2f", titles: [String] = [], isEnabled: Bool = true,
        binding: ControlBinding = .app, action: ControlAction? = nil
    ) {
        self.name = name
        self.title = title
        self.symbolName = symbolName
        self.scale = scale
        self.value = scale.clamped(value)
        self.valueFormat = valueFormat
        self.titles = titles
        self.isEnabled = isEnabled
        self.binding = binding
        self.action = action
    }

    /// A continuous slider over `range`, optionally settling on `prominentValues`.
    public static func slider(
        name: String, title: String, symbolName: String, range: ClosedRange<Double>, value: Double,
        prominentValues: [Double] = [], format: String = "%.2f", action: ControlAction? = nil
    ) -> Control {
        let prominent = prominentValues.filter { range.contains($0) }.sorted()
        return Control(
            name: name, title: title, symbolName: symbolName, scale: .continuous(range: range, prominentValues: prominent),
            value: value, valueFormat: format, action: action)
    }

    /// A discrete slider over an explicit list of values.
    public static func slider(
        name: String, title: String, symbolName: String, values: [Double], value: Double,
        format: String = "%.2f", action: ControlAction? = nil
    ) -> Control {
        precondition(!values.isEmpty, "a discrete slider needs at least one value")
        return Control(
            name: name, title: title, symbolName: symbolName, scale: .discrete(values: Array(Set(values)).sorted()),
            value: value, valueFormat: format, action: action)
    }

    /// A discrete slider over a range with a fixed step.
    public static func slider(
        name: String, title: String, symbolName: String, range: ClosedRange<Double>, step: Double, value: Double,
        format: String = "%.2f", action: ControlAction? = nil
    ) -> Control {
        slider(
            name: name, title: title, symbolName: symbolName, values: ControlScale.values(in: range, step: step),
            value: value, format: format, action: action)
    }

    /// An index picker over `titles` (white balance presets, frame rates, …).
    public static func indexPicker(
        name: String, title: String, symbolName: String, titles: [String], index: Int = 0, wraps: Bool = false,
        action: ControlAction? = nil
    ) -> Control {
        precondition(!titles.isEmpty, "an index picker needs at least one title")
        return Control(
            name: name, title: title, symbolName: symbolName, scale: .index(count: titles.count, wraps: wraps),
            value: Double(index), valueFormat: "%.0f", titles: titles, action: action)
    }

    /// The value as a display shows it: the picker's title, or the value in `valueFormat`.
    public var displayValue: String {
        if case .index = scale, !titles.isEmpty {
            return titles[Swift.min(Swift.max(Int(value.rounded()), 0), titles.count - 1)]
        }
        return String(cFormat: valueFormat, value)
    }
}
