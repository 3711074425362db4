import Vocabulary
import V4L2

/// When the capture stream runs (docs/behaviour.md#the-moment-of-the-press).
public enum StreamMode: String, Sendable, Hashable, CaseIterable {
    /// While the capture session runs: a photo is the frame nearest the press (zero shutter
    /// lag), a video starts at the press, with pre-roll.
    case always
    /// Started at a press's `began` (prepared), stopped after `idleStop` without presses:
    /// no camera activity while nobody presses, a photo as early as the camera allows.
    case onPress = "on-press"
}

/// How many recent frames the ring keeps.
public struct RingLimits: Sendable, Hashable {
    /// Seconds of frames kept (what pre-roll can reach back to).
    public var seconds: Double
    /// The most memory the copies may take, in bytes.
    public var memoryBytes: Int

    public init(seconds: Double = 2, memoryBytes: Int = 64 << 20) {
        self.seconds = seconds
        self.memoryBytes = memoryBytes
    }

    /// Slots for frames of `frameBytes` at `fps`: enough for `seconds`, at least 3, at most
    /// what `memoryBytes` allows (and never fewer than 2).
    public func slots(frameBytes: Int, fps: Double?) -> Int {
        let wanted = max(3, Int((seconds * (fps ?? 30)).rounded(.up)) + 2)
        let affordable = max(2, memoryBytes / max(1, frameBytes))
        return min(wanted, affordable)
    }
}

/// A frame from the ring: its bytes as the camera sent them (MJPEG, or uncompressed: YUYV,
/// YU12, NV12, RGB3, BGR3).
public struct RingFrame: Sendable {
    public var frame: VideoFrame
    public var timestampKind: FrameTimestampKind
    /// The kernel timestamp (CLOCK_MONOTONIC when `timestampKind` says so).
    public var time: Timestamp { Timestamp(microseconds: frame.timestampMicroseconds) }
}
