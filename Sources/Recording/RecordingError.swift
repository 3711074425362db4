import Movie
import Vocabulary

extension RecordingError {
    /// A write failure is the file's (a full disk is `disk-full`), anything else the encoder's.
    static func movie(_ e: MovieError) -> RecordingError {
        e.code == .videoWrite ? .file(FileWriteError(errno: e.errno, context: e.context)) : .video(e)
    }
}
