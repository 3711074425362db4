/// A written photo.
public struct PhotoResult: Sendable, Hashable {
    public var path: String
    public var width: Int
    public var height: Int
    public var bytes: Int
    /// The frame's kernel timestamp (CLOCK_MONOTONIC, the clock of capture events).
    public var frameTime: Timestamp?
    /// The driver's frame counter.
    public var sequence: UInt32?
    /// The request's trigger id.
    public var trigger: String? = nil
    /// For a trigger with the press's wall-clock time: the chosen frame's time minus that
    /// instant, in µs (how close this station came to the rig's moment).
    public var pressOffset: Int64? = nil
    public init(
        path: String, width: Int, height: Int, bytes: Int, frameTime: Timestamp? = nil, sequence: UInt32? = nil, trigger: String? = nil,
        pressOffset: Int64? = nil
    ) {
        self.path = path
        self.width = width
        self.height = height
        self.bytes = bytes
        self.frameTime = frameTime
        self.sequence = sequence
        self.trigger = trigger
        self.pressOffset = pressOffset
    }
}

/// A written video.
public struct VideoResult: Sendable, Equatable {
    public var path: String
    public var frames: Int
    public var framesPerSecond: Double
    public var width: Int
    public var height: Int
    /// The recording stopped early at the size limit or after a camera error.
    public var truncated: Bool
    /// The first frame's kernel timestamp (CLOCK_MONOTONIC).
    public var frameTime: Timestamp?
    /// Frames the recording could not keep up with (the ring overwrote them).
    public var skipped: Int = 0
    /// Damaged camera frames left out (MP4: a JPEG that does not decode).
    public var undecodable: Int = 0
    public var format: VideoFormat = .avi
    /// The H.264 encoder (MP4 only): `camera` when the camera's H.264 was muxed as it is.
    public var encoder: String? = nil
    /// From the first frame's time to the end of the last (seconds).
    public var duration: Double = 0
    /// Why the recording ended before its stop (the camera went away, the disk is full).
    public var stoppedBy: RecordingError? = nil
    /// The request's trigger id.
    public var trigger: String? = nil

    public init(
        path: String, frames: Int, framesPerSecond: Double, width: Int, height: Int, truncated: Bool, frameTime: Timestamp? = nil,
        skipped: Int = 0, undecodable: Int = 0, format: VideoFormat = .avi, encoder: String? = nil, duration: Double = 0,
        stoppedBy: RecordingError? = nil, trigger: String? = nil
    ) {
        self.path = path
        self.frames = frames
        self.framesPerSecond = framesPerSecond
        self.width = width
        self.height = height
        self.truncated = truncated
        self.frameTime = frameTime
        self.skipped = skipped
        self.undecodable = undecodable
        self.format = format
        self.encoder = encoder
        self.duration = duration
        self.stoppedBy = stoppedBy
        self.trigger = trigger
    }
}

/// A recording a crash (a kill, a power cut) interrupted, kept at the next start.
public struct RecoveredVideo: Sendable, Hashable {
    /// Where it is now, under the name it was to get (or a numbered variant).
    public var path: String
    /// The temporary file it was found as.
    public var temporaryName: String
    public var format: VideoFormat
    /// Frames kept (whole frames for AVI, whole fragments for MP4).
    public var frames: Int

    public init(path: String, temporaryName: String, format: VideoFormat, frames: Int) {
        self.path = path
        self.temporaryName = temporaryName
        self.format = format
        self.frames = frames
    }
}

/// The container and codec of videos.
public enum VideoFormat: String, Sendable, Hashable, CaseIterable {
    /// H.264 in fragmented MP4 (the default): small files any player takes, at most a
    /// fragment (1 s) lost to a crash.
    case mp4
    /// MJPEG in AVI: every frame a whole JPEG as the camera sent it (frame-exact work),
    /// several times the size.
    case avi

    /// `.mp4`, `.avi`
    public var fileExtension: String { "." + rawValue }

    /// The format a file name's extension says (`clip.MP4` is mp4), nil for another.
    public init?(fileName: String) {
        guard let dot = fileName.lastIndex(of: ".") else { return nil }
        self.init(rawValue: fileName[fileName.index(after: dot)...].lowercased())
    }
}
