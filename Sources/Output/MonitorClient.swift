#if canImport(Glibc)
import Glibc
import LinuxIO
#endif

/// The client side of `evcapture monitor`: reads the daemon's JSON lines from its socket
/// and hands the rendered text on.
public enum MonitorClient {
    /// Connects to `socketPath` and renders every line until the daemon closes the
    /// connection (returns) or reading fails (throws). Blocks the calling thread.
    public static func run(
        socketPath: String, renderer: MonitorRenderer, output: (String) -> Void
    ) throws(SocketServerError) {
        let fd: Int32
        do {
            fd = try SocketServer.connect(to: socketPath)
        } catch {
            var e = error
            e.context += " (is `evcapture run --socket \(socketPath)` running, and may this user open it?)"
            throw e
        }
        defer { close(fd) }
        var renderer = renderer
        var pending = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n: Int
            do {
                n = try retryingEINTR { buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
            } catch {
                throw SocketServerError(errno: error.errno, context: "reading from \(socketPath)")
            }
            if n == 0 { break }
            pending.append(contentsOf: buffer[0..<n])
            var start = 0
            while let nl = pending[start...].firstIndex(of: 10) {
                let line = String(decoding: pending[start..<nl], as: UTF8.self)
                start = nl + 1
                if !line.isEmpty { output(renderer.consume(line: line)) }
            }
            pending.removeFirst(start)
        }
        if renderer.controlLine != nil { output("\n") }
    }
}
