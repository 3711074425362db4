// The idle floor for any Swift program that uses concurrency on Linux: one task runs, then
// the process waits forever for nothing. Its threads' context switches over 10 s
// (Tests/System/bench/daemon.py) are what the runtime itself costs while idle.
#if canImport(Glibc)
import Glibc
#endif

@main
enum IdleFloor {
    static func main() async {
        await Task.detached { _ = getpid() }.value
        while true { pause() }
    }
}
