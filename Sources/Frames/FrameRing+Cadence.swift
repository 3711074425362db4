import Vocabulary

/// The camera's cadence, read from the frames the ring holds: when its next frames come.
/// A timelapse starts on it (docs/booth.md#timelapse), so that its shots fall on frames.
extension FrameSource {
    /// The time of the camera's frame nearest `time` (past or to come), from the newest frame
    /// the ring holds and the camera's frame interval over the frames it holds (by their
    /// sequence numbers, so frames the camera dropped do not stretch it). Nil while the ring
    /// holds fewer than two frames of a running stream: there is no cadence to go by.
    public func frameTime(nearest time: Timestamp) -> Timestamp? {
        state.withLock { s -> Timestamp? in
            guard s.running, s.filled >= 2 else { return nil }
            let newest = s.newest
            let oldest = s.slot(fromOldest: 0)
            // The sequence counts the frames the camera dropped; one that went backwards or
            // stood still (a driver that does not count) leaves the frames themselves.
            let steps = newest.sequence > oldest.sequence ? Int64(newest.sequence - oldest.sequence) : Int64(s.filled - 1)
            let interval = Double(newest.time.microseconds - oldest.time.microseconds) / Double(steps)
            return Self.frameTime(nearest: time, newest: newest.time, interval: interval)
        }
    }

    /// Pure: the time on the grid of frames `interval` µs apart through `newest` nearest
    /// `time` (half way between two frames: the later). Nil for an interval that is not a
    /// positive number of microseconds.
    public static func frameTime(nearest time: Timestamp, newest: Timestamp, interval: Double) -> Timestamp? {
        guard interval.isFinite, interval >= 1 else { return nil }
        let k = (Double(time.microseconds - newest.microseconds) / interval + 0.5).rounded(.down)
        return Timestamp(microseconds: newest.microseconds + Int64((k * interval).rounded()))
    }
}
