#if canImport(Glibc)
import Glibc
#endif

/// posix_spawn attributes that start a child as a shell would: no blocked signals, and
/// SIGTERM, SIGINT, SIGPIPE, SIGCHLD and SIGHUP at their default dispositions (the test
/// process may block or ignore them on its threads; the daemon under test must not inherit
/// that). The one place tests set this up.
public final class ShellSpawnAttributes {
    public var raw = posix_spawnattr_t()

    public init() {
        posix_spawnattr_init(&raw)
        var none = sigset_t()
        sigemptyset(&none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGINT, SIGPIPE, SIGCHLD, SIGHUP] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigmask(&raw, &none)
        posix_spawnattr_setsigdefault(&raw, &defaults)
        posix_spawnattr_setflags(&raw, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    }

    deinit { posix_spawnattr_destroy(&raw) }
}
