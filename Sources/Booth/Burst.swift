/// Which frames a burst keeps (docs/booth.md#burst): `count` consecutive frames of the
/// ring, `before` of them taken before the frame nearest the moment, that frame, and the
/// rest after it. Pure: the frames are offered in order, as the ring delivers them, and it
/// says when it has enough.
///
/// When the ring does not reach back `before` frames (a stream that just started), the
/// burst keeps its count with more frames after the moment.
public struct BurstSelection<Frame>: Sendable where Frame: Sendable {
    /// Frames in a burst: 1 to this.
    public static var maximumCount: Int { 50 }

    public let moment: Int64
    public let count: Int
    public let before: Int
    /// The frames kept before the nearest one is known (at most `before + 1`).
    private var window: [(time: Int64, frame: Frame)] = []
    /// The burst once the nearest frame is known.
    public private(set) var chosen: [(time: Int64, frame: Frame)] = []
    private var decided = false

    public init(moment: Int64, count: Int, before: Int) {
        precondition((1...Self.maximumCount).contains(count) && (0..<count).contains(before), "burst out of range")
        self.moment = moment
        self.count = count
        self.before = before
    }

    public var isComplete: Bool { chosen.count >= count }

    /// Offers the next frame (times rising); returns true while more frames are wanted.
    public mutating func offer(_ frame: Frame, time: Int64) -> Bool {
        guard !isComplete else { return false }
        if decided {
            chosen.append((time, frame))
            return !isComplete
        }
        if time < moment {
            window.append((time, frame))
            if window.count > before + 1 { window.removeFirst() }
            return true
        }
        // The first frame at or after the moment: it or the one before is the nearest.
        decided = true
        if let last = window.last, moment - last.time <= time - moment {
            chosen = window
        } else {
            chosen = Array(window.suffix(before))
            chosen.append((time, frame))
            if chosen.count > count { chosen.removeFirst(chosen.count - count) }
            return !isComplete
        }
        // The nearest frame is the window's last; the frame just offered comes after it.
        if chosen.count > before + 1 { chosen.removeFirst(chosen.count - before - 1) }
        if !isComplete { chosen.append((time, frame)) }
        return !isComplete
    }

    /// The burst's frames in time order.
    public var frames: [Frame] { chosen.map(\.frame) }
    public var times: [Int64] { chosen.map(\.time) }
}
