#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import Foundation

/// The built `evcapture` executable, run as a person runs it.
public enum EvcaptureCommand {
    /// `.build/debug/evcapture`, which `swift build --build-tests` builds with the tests.
    public static let path = Fixtures.repository + "/.build/debug/evcapture"

    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// The executable is missing: a test that needs it fails (it never skips in silence).
    public struct Missing: Error, CustomStringConvertible {
        public var description: String { "\(EvcaptureCommand.path) is not built (swift build --build-tests builds it)" }
    }

    /// Runs the binary with posix_spawn (Foundation's Process needs a CFSocket wake-up pair,
    /// which the test VM's chroot does not always give) and collects its output.
    public static func run(_ args: [String]) throws -> Result {
        guard FileManager.default.isExecutableFile(atPath: path) else { throw Missing() }
        var outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw POSIXError(.EMFILE) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        // Nothing else of the test process (the pipes' other ends included): a parallel
        // test's pipe or socket held by this child would stay open as long as it runs.
        evc_spawn_close_from(&actions, 3)
        let argv = ([path] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
        close(outPipe[1])
        close(errPipe[1])
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EINVAL) }
        // Both pipes drained at once: a run that writes much to stderr never waits on it.
        var out: [UInt8] = [], err: [UInt8] = []
        var fds = [pollfd(fd: outPipe[0], events: Int16(POLLIN), revents: 0), pollfd(fd: errPipe[0], events: Int16(POLLIN), revents: 0)]
        var open = 2
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open > 0 {
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = read(fds[i].fd, &buffer, buffer.count)
                if n > 0 {
                    if i == 0 { out += buffer[0..<n] } else { err += buffer[0..<n] }
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    close(fds[i].fd)
                    fds[i].fd = -1
                    open -= 1
                }
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(status: exit, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
    }
}
