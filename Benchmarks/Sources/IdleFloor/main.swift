// The idle floor for any Swift program that uses concurrency on Linux: one task runs, then
// the process waits forever for nothing. Its threads' context switches over 10 s
// (Tests/System/bench/daemon.py) are what the runtime itself costs while idle.
//
// `idle-floor`: Swift's default executors (libdispatch), the main thread parked in pause().
// `idle-floor main-thread-executor`: evcapture's `MainThreadExecutor` (what the daemon
// runs on): the same task, plus a Task.sleep, then every job done.
import ConcurrencyRuntime

#if canImport(Glibc)
import Glibc
#endif

if CommandLine.arguments.dropFirst().first == "main-thread-executor" {
    MainThreadExecutor.run {
        await Task.detached { _ = getpid() }.value
        try? await Task.sleep(for: .milliseconds(100))
        // Suspended for good: nothing is left to run, no timer is armed.
        await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in }
    }
}
Task.detached { _ = getpid() }
while true { pause() }
