/// One captured frame, copied out of the driver's buffer.
public struct VideoFrame: Sendable {
    public var bytes: [UInt8]
    public var format: StreamFormat
    /// The driver's frame counter.
    public var sequence: UInt32
    /// The driver's timestamp (usually CLOCK_MONOTONIC), in microseconds.
    public var timestampMicroseconds: Int64

    public init(bytes: [UInt8], format: StreamFormat, sequence: UInt32 = 0, timestampMicroseconds: Int64 = 0) {
        self.bytes = bytes
        self.format = format
        self.sequence = sequence
        self.timestampMicroseconds = timestampMicroseconds
    }
}
