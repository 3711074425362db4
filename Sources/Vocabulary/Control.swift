#if canImport(Glibc)
import Glibc
#endif

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

    /// The value as a display shows it: the picker's title, or the value in `valueFormat`.
    public var displayValue: String {
        if case .index = scale, !titles.isEmpty {
            return titles[Swift.min(Swift.max(Int(value.rounded()), 0), titles.count - 1)]
        }
        return String(cFormat: valueFormat, value)
    }
}

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

    package static let epsilon = 1e-9

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

/// The camera a system control is bound to, as the core sees it: an identity (a by-id path,
/// or "sim"), for the one-slider-per-camera rule. Driving the camera is the camera module's
/// job (docs/architecture.md#the-camera-backend-seam): the core decides values, the camera
/// module applies them.
public protocol BoundCamera: AnyObject, Sendable {
    var identity: String { get }
}

/// A control's action: what runs when a person changes the control's value.
///
/// Values are delivered in order, one call at a time, from a single task that prefers the
/// `TaskExecutor` the app passes (or the global concurrent executor when it passes none).
/// To run on an actor instead, hop inside the body: `ControlAction { v in await camera.setZoom(v) }`.
/// Delivery never blocks input handling: values queue in a buffer that keeps the newest
/// `bufferSize`, so a slow action skips stale intermediate values but always sees the last one.
public final class ControlAction: Sendable {
    private let continuation: AsyncStream<Double>.Continuation

    public init(
        executor: (any TaskExecutor)? = nil, bufferSize: Int = 32,
        _ body: @escaping @Sendable (Double) async -> Void
    ) {
        let (stream, continuation) = AsyncStream<Double>.makeStream(bufferingPolicy: .bufferingNewest(bufferSize))
        self.continuation = continuation
        Task(executorPreference: executor) {
            for await value in stream { await body(value) }
        }
    }

    /// Queues `value` for the action.
    public func deliver(_ value: Double) { continuation.yield(value) }

    deinit { continuation.finish() }
}
