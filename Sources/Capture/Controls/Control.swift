import Vocabulary

// A control and its scale are the floor's (docs/architecture.md#modules): the lines and the
// displays read them. How a slide moves a value, and the controls an app builds, are the core's.

extension ControlScale {
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
}

extension Control {
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
}
