import Vocabulary

/// Which camera the capture stream opens and how: what the stream reads of the capture
/// settings (`CaptureSettings.stream`).
public struct StreamSettings: Sendable, Hashable {
    /// The V4L2 capture node (`/dev/video0`, `/dev/v4l/by-id/...`); for another camera (a
    /// libcamera id), the name it has in messages.
    public var devicePath: String
    /// Requested frame size; nil keeps the camera's current size.
    public var width: Int?
    public var height: Int?
    /// The frame rate to ask the camera for; nil keeps the driver's.
    public var framesPerSecond: Double?
    /// The pixel formats to ask the camera for, in order (the first it offers is taken).
    public var pixelFormats: [PixelFormat]
    /// `[camera] pixel-format`'s values and the formats each asks for: `auto` is
    /// ``PixelFormat/captureOrder``; H.264 only when named (docs/video.md#the-cameras-own-h264).
    public static let pixelFormatChoices: KeyValuePairs<String, [PixelFormat]> = [
        "auto": PixelFormat.captureOrder, "mjpeg": [.mjpeg, .jpeg], "yuyv": [.yuyv], "h264": [.h264],
    ]
    /// The camera's H.264 is asked for: the ring holds H.264 access units.
    public var wantsH264: Bool { pixelFormats == [.h264] }
    /// The longest wait for one frame before giving up with a `camera-timeout` error.
    public var frameTimeout: Duration

    public init(
        devicePath: String, width: Int? = nil, height: Int? = nil, framesPerSecond: Double? = nil,
        pixelFormats: [PixelFormat] = PixelFormat.captureOrder, frameTimeout: Duration = .seconds(3)
    ) {
        self.devicePath = devicePath
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.pixelFormats = pixelFormats
        self.frameTimeout = frameTimeout
    }
}
