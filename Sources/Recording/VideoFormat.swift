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

    /// The default name pattern of videos in this format.
    public var defaultPattern: FileNamePattern {
        switch self {
        case .mp4: .defaultVideo
        case .avi: .defaultAVIVideo
        }
    }

    /// The format a file name's extension says (`clip.MP4` is mp4), nil for another.
    public init?(fileName: String) {
        guard let dot = fileName.lastIndex(of: ".") else { return nil }
        self.init(rawValue: fileName[fileName.index(after: dot)...].lowercased())
    }
}

extension FileNamePattern {
    /// The default name of MJPEG AVI videos.
    static let defaultAVIVideo = try! FileNamePattern("evcapture-{date}-{time}-press{press}.avi")
}
