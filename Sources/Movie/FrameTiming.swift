/// A recording's clock: kernel frame timestamps (CLOCK_MONOTONIC µs) become presentation
/// times in 1/90000 s from the first frame, and it decides which frames are keyframes.
///
/// Variable frame rate is kept: each frame's time is its own timestamp, not a count times a
/// nominal interval, so a camera that slows down in the dark plays back at the speed it
/// was filmed. Times only go forward: a timestamp at or before the previous one (a driver
/// glitch) is placed one tick after it.
///
/// A keyframe starts every fragment of the MP4: one comes as the first frame and then
/// before `keyframeInterval` would be exceeded (when the next frame, expected one interval
/// later, would end past it), so no fragment is longer than the interval.
public struct FrameTiming: Sendable, Equatable {
    /// Ticks per second of presentation times (the MPEG 90 kHz clock).
    static let ticksPerSecond: Int64 = 90_000

    public let keyframeInterval: Int64
    /// The first frame's timestamp (µs).
    public private(set) var origin: Int64?
    private(set) var lastPTS: Int64 = -1
    private var lastKeyframe: Int64 = 0
    /// The last gap between two frames (ticks); before the second frame, the nominal one.
    public private(set) var interval: Int64

    /// `nominalRate`: the driver's frame rate, the first frame's duration until a second
    /// one arrives (30 when it says none).
    public init(keyframeInterval: Duration, nominalRate: Double?) {
        let ms = keyframeInterval / .milliseconds(1)
        self.keyframeInterval = max(1, Int64((ms * Double(Self.ticksPerSecond) / 1000).rounded()))
        let rate = nominalRate.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? 30
        interval = max(1, Int64((Double(Self.ticksPerSecond) / rate).rounded()))
    }

    /// Microseconds as ticks, rounded to the nearest.
    public static func ticks(micros: Int64) -> Int64 {
        let scaled = micros * ticksPerSecond
        return scaled >= 0 ? (scaled + 500_000) / 1_000_000 : -((-scaled + 500_000) / 1_000_000)
    }

    /// The next frame, taken at `micros`: its presentation time, the duration it is shown
    /// for (the last gap: its own is known only when the next frame comes) and whether it
    /// must be a keyframe.
    public mutating func frame(at micros: Int64) -> (pts: Int64, duration: Int64, keyframe: Bool) {
        guard let origin else {
            self.origin = micros
            lastPTS = 0
            lastKeyframe = 0
            return (0, interval, true)
        }
        var pts = Self.ticks(micros: micros - origin)
        if pts <= lastPTS { pts = lastPTS + 1 }
        interval = max(1, pts - lastPTS)
        lastPTS = pts
        // A keyframe when waiting for the next frame (and half a gap of jitter) would make
        // this fragment longer than the interval.
        let keyframe = pts - lastKeyframe + interval + interval / 2 > keyframeInterval
        if keyframe { lastKeyframe = pts }
        return (pts, interval, keyframe)
    }
}
