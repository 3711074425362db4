import Vocabulary

extension VideoFormat {
    /// The default name pattern of videos in this format.
    public var defaultPattern: FileNamePattern {
        switch self {
        case .mp4: .defaultVideo
        case .avi: .defaultAVIVideo
        }
    }
}

extension FileNamePattern {
    /// The default name of MJPEG AVI videos.
    static let defaultAVIVideo = try! FileNamePattern("evcapture-{date}-{time}-press{press}.avi")
}
