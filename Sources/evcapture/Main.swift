import ConcurrencyRuntime
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// The entry point. Every task of the process runs on the main thread's executor, not on
/// libdispatch's worker pool, whose 1 s pool-monitor timer would wake the idle daemon every
/// second for good (see ``MainThreadExecutor``). Blocking work has threads of its own
/// (`IOLoop`, `ThreadExecutor`), as it did before.
///
/// `EVCAPTURE_EXECUTOR=dispatch` runs on Swift's default executors instead (what an async
/// `main` does): for comparing the two, and a way out should a toolchain break the hooks.
@main
enum Main {
    static func main() {
        if let choice = getenv("EVCAPTURE_EXECUTOR"), String(cString: choice) == "dispatch" {
            Task {
                await Evcapture.main()
                exit(0)
            }
            dispatchMain()
        }
        MainThreadExecutor.run { await Evcapture.main() }
    }
}
