import Synchronization
import EvcaptureTesting

extension FakeCamera {
    /// Every SET_CUR since the last start as `control = value` lines (`zoom_absolute = 300`),
    /// in order; ``received()`` as text, easy to compare and to print.
    var receivedLines: [String] { received().map { "\($0.control) = \($0.value)" } }

    /// What the camera received after its first `mark` values, once every request sent
    /// before this call has arrived.
    ///
    /// uvcvideo sends one control request at a time and the camera logs them in order, so a
    /// marker written now and seen in the log proves that every earlier request is logged
    /// too — no guessing how long the emulated USB takes, and a request that should not
    /// have been sent cannot slip in later. The marker is a `brightness` write (each one a
    /// different value), left out of the result: do not use this where brightness matters.
    func receivedLines(after mark: Int, timeout: Duration = .seconds(15)) throws -> [String] {
        guard let node else { throw FakeCameraError("the fake camera is not running") }
        let marker = Self.markers.withLock { n -> Int in
            n += 1
            return 1 + n % 64  // 1...64, never twice in a row
        }
        let set = try run("v4l2-ctl", "-d", node, "--set-ctrl", "brightness=\(marker)", timeout: timeout)
        guard set.succeeded else { throw FakeCameraError("writing the marker brightness=\(marker) failed: \(set)") }
        var found: Int?
        _ = pollUntil(timeout: timeout) {
            let all = received()
            found = all.indices.last { $0 >= mark && all[$0] == ("brightness", marker) }
            return found != nil
        }
        guard let found else {
            throw FakeCameraError("the marker brightness=\(marker) did not reach the camera within \(timeout)\n\(log)")
        }
        return Array(receivedLines[mark..<found])
    }

    private static let markers = Mutex(0)
}
