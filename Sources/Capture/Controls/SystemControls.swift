#if canImport(Glibc)
import Glibc
#endif

/// Exposure bias values: −2 … +2 EV in 1/3 steps.
public let exposureBiasValues: [Double] = (-6...6).map { ControlScale.tidy(Double($0) / 3) }

extension Control {
    /// The zoom slider of a camera without `zoom_absolute` (name `"zoom"`, 1× … `maximum`,
    /// whole factors prominent, format `%.1f×`): digital zoom, done on the photos.
    public static func digitalZoomSlider(maximum: Double = 4, action: ControlAction? = nil) -> Control {
        let top = Swift.max(1, maximum)
        let prominent: [Double] = top >= 2 ? (2...Int(top)).map(Double.init).filter { $0 < top } : []
        return Control(
            name: "zoom", title: "Zoom", symbolName: "plus.magnifyingglass",
            scale: .continuous(range: 1...top, prominentValues: prominent),
            value: 1, valueFormat: "%.1f×", binding: .digitalZoom, action: action)
    }
}
