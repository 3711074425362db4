import Vocabulary

/// The bytes around each part of `/stream.mjpg` and each event of `/events`. Pure.
public enum Framing {
    /// The multipart boundary (never inside a part: each part has its length).
    public static let boundary = "evcaptureframe"
    static let streamContentType = "multipart/x-mixed-replace; boundary=\(boundary)"

    /// What precedes one JPEG part: the boundary, its type, its length and the frame's kernel
    /// time (CLOCK_MONOTONIC seconds, as the JSON lines' `time`). After the JPEG: ``partTrailer``.
    static func partHeader(length: Int, time: Timestamp, sequence: UInt32) -> String {
        "--\(boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(length)\r\n"
            + "X-Timestamp: \(timestamp(time))\r\nX-Sequence: \(sequence)\r\n\r\n"
    }

    static let partTrailer = "\r\n"

    /// One Server-Sent Event carrying one JSON line (which never holds a newline).
    public static func event(_ line: String) -> String {
        // A line with a newline would end the event early: each line gets its own `data:`.
        "data: " + line.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\ndata: ") + "\n\n"
    }
}

extension Framing {
    /// A kernel time in µs as the JSON lines write it (seconds with six decimals).
    public static func timestamp(_ time: Timestamp) -> String { time.description }
}
