import V4L2
import Vocabulary

/// One run of a camera's frames for the capture stream: a V4L2 capture node
/// (``VideoCaptureStream``) or a camera another library drives (libcamera,
/// docs/libcamera.md). Used by the stream's thread alone, from open to close.
public protocol FrameStream: AnyObject {
    /// What the camera delivers.
    var format: StreamFormat { get }
    /// Waits at most `timeout` for the next frame and lends it to `body` (valid only there),
    /// then gives its buffer back to the camera. `.timedOut` when none came; a camera that
    /// went away is `.deviceRemoved`.
    func withNextFrame(timeout: Duration, _ body: (BorrowedFrame) -> Void) throws(StreamingError)
    /// Stops and lets the camera go.
    func close()
}

extension VideoCaptureStream: FrameStream {}

/// Opens the camera behind the capture stream, streaming, at each start of the stream.
/// `StreamSettings.devicePath` names the camera in messages: the V4L2 node, or the
/// libcamera camera's id.
public struct FrameStreamOpener: Sendable {
    public var open: @Sendable (StreamSettings) throws(StreamingError) -> any FrameStream

    public init(open: @escaping @Sendable (StreamSettings) throws(StreamingError) -> any FrameStream) {
        self.open = open
    }

    /// `settings.devicePath`, a V4L2 capture node, at the settings' size and rate.
    public static let v4l2 = FrameStreamOpener { settings throws(StreamingError) in
        let stream = try VideoCaptureStream(
            path: settings.devicePath, width: settings.width, height: settings.height, framesPerSecond: settings.framesPerSecond,
            pixelFormats: settings.pixelFormats)
        try stream.start()
        return stream
    }
}
