import CLinuxShims
import Camera
import Output
import ConfigFile
import Udev

/// Turns transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`); call it
/// first thing in `main`, before any thread exists.
///
/// With THP set to "always" (Debian's kernel default) a thread's 8 MB stack can be given a
/// 2 MB huge page for the few kB the thread uses: the daemon's resident set was 2 MB larger
/// in some starts and not in others (BENCHMARKS.md, "memory"). The daemon has no large heap that
/// huge pages would speed up. Children (hooks, the sound player) inherit the setting.
public func disableTransparentHugePages() {
    _ = evc_disable_transparent_huge_pages()
}
