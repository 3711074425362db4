import Logging
import V4L2
import Vocabulary
import Movie
import Frames

extension CaptureSettings {
    /// The capture stream these settings describe: the camera's frames (through `opener`: a
    /// V4L2 capture node unless told otherwise, docs/libcamera.md) in a ring of `ring`, run
    /// in `streamMode` (docs/behaviour.md#the-moment-of-the-press). A camera's H.264 frames
    /// are made into pictures for photos and the live view by `Movie`'s decoder. `onError`
    /// hears each failure of the stream. Made by whoever makes the action runner (the
    /// daemon), which hands it to the runner: photos and videos are taken from it.
    public func captureStream(
        opener: FrameStreamOpener = .v4l2, logger: Logger, onError: @escaping @Sendable (StreamingError) -> Void = { _ in }
    ) -> FrameSource {
        FrameSource(
            settings: stream, mode: streamMode, limits: ring, idleStop: streamIdleStop, opener: opener,
            pictures: PictureDecoder { run throws(StreamingError) in try H264Picture.decode(run) }, logger: logger,
            onError: onError)
    }
}
