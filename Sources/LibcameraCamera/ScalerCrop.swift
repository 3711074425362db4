/// A rectangle in sensor pixels: libcamera's `Rectangle` (`ScalerCrop`, `ScalerCropMaximum`).
public struct SensorRect: Sendable, Hashable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)@(\(x),\(y))" }

    /// Whether `other` lies wholly inside this rectangle.
    public func contains(_ other: SensorRect) -> Bool {
        other.x >= x && other.y >= y && other.x + other.width <= x + width && other.y + other.height <= y + height
    }
}

/// Digital zoom as libcamera does it: a `ScalerCrop` rectangle centred in
/// `ScalerCropMaximum`, shrinking as the zoom grows. Zoom values are in hundredths (100 =
/// no zoom), as the `zoom_absolute` control the controls core drives (docs/libcamera.md).
public struct ScalerCropZoom: Sendable, Hashable {
    /// `properties::ScalerCropMaximum`: the whole field of view.
    public var maximum: SensorRect
    /// The smallest crop the camera accepts (the `ScalerCrop` control's minimum), or nil:
    /// then the zoom stops at ``defaultMaximumZoom``.
    var minimumWidth: Int?
    var minimumHeight: Int?
    /// The largest zoom offered when the camera gives no minimum crop (in hundredths).
    static let defaultMaximumZoom = 400

    public init(maximum: SensorRect, minimumWidth: Int? = nil, minimumHeight: Int? = nil) {
        self.maximum = maximum
        self.minimumWidth = minimumWidth
        self.minimumHeight = minimumHeight
    }

    /// The zoom range in hundredths: 100 up to what the smallest crop allows (at least 100).
    var zoomRange: ClosedRange<Int> {
        guard maximum.width > 0, maximum.height > 0 else { return 100...100 }
        guard let w = minimumWidth, let h = minimumHeight, w > 0, h > 0 else { return 100...Self.defaultMaximumZoom }
        let limit = min(maximum.width * 100 / w, maximum.height * 100 / h)
        return 100...max(100, limit)
    }

    /// The crop for `zoom` (hundredths, clamped to ``zoomRange``): the maximum's aspect
    /// ratio, even width and height, centred, always inside the maximum.
    public func crop(zoom: Int) -> SensorRect {
        let range = zoomRange
        let z = min(max(zoom, range.lowerBound), range.upperBound)
        guard maximum.width > 0, maximum.height > 0 else { return maximum }
        if z == 100 { return maximum }
        var width = max(2, (maximum.width * 100 / z) & ~1)
        var height = max(2, (maximum.height * 100 / z) & ~1)
        if let w = minimumWidth, w > 0 { width = max(width, min(w, maximum.width)) }
        if let h = minimumHeight, h > 0 { height = max(height, min(h, maximum.height)) }
        width = min(width, maximum.width)
        height = min(height, maximum.height)
        let x = maximum.x + (maximum.width - width) / 2
        let y = maximum.y + (maximum.height - height) / 2
        return SensorRect(x: x, y: y, width: width, height: height)
    }
}

/// `controls::ExposureValue` (EV, a float) as the exposure bias the controls core drives:
/// V4L2's `auto_exposure_bias`, an integer menu of milli-EV, here in 1/3 EV steps within
/// the camera's range.
public struct ExposureValueMapping: Sendable, Hashable {
    /// The camera's `ExposureValue` range.
    public var minimum: Double
    public var maximum: Double

    public init(minimum: Double, maximum: Double) {
        self.minimum = minimum.isFinite ? minimum : 0
        self.maximum = maximum.isFinite ? max(maximum, self.minimum) : self.minimum
    }

    /// The menu's entries in milli-EV, 1/3 EV apart, from the range's lowest step to its
    /// highest; always includes 0 when the range does.
    public var menu: [Int64] {
        let low = Int((minimum * 3).rounded(.up))
        let high = Int((maximum * 3).rounded(.down))
        guard low <= high else { return [0] }
        // At most ±8 EV in 1/3 steps, whatever a camera claims.
        return (max(low, -24)...min(high, 24)).map { Int64(($0 * 1000) / 3) }
    }

    /// The menu index of `ev`'s nearest entry.
    public func index(ofEV ev: Double) -> Int {
        let entries = menu
        guard ev.isFinite else { return entries.firstIndex(of: 0) ?? 0 }
        var best = 0
        for (i, milli) in entries.enumerated() where abs(Double(milli) / 1000 - ev) < abs(Double(entries[best]) / 1000 - ev) {
            best = i
        }
        return best
    }

    /// The `ExposureValue` of menu index `index` (clamped to the menu).
    public func ev(ofIndex index: Int) -> Float {
        let entries = menu
        let i = min(max(index, 0), entries.count - 1)
        return Float(Double(entries[i]) / 1000)
    }
}
