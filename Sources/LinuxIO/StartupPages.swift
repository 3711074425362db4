import CLinuxShims

/// The code a daemon runs once — argument parsing, the config reader, the first device
/// enumeration, the dynamic loader's relocation and symbol tables — stays mapped after it has
/// run, and the kernel counts it as resident (with 64 KiB of fault-around per touch): about
/// 9 MB of a 17 MB resident set. Releasing the read-only segments of every loaded object once
/// the daemon is ready leaves only what it touches afterwards.
public enum StartupPages {
    /// MADV_DONTNEED on every loaded object's read-only segments (clean file pages: nothing
    /// is lost, a page needed again is mapped back from the page cache). Writable segments,
    /// RELRO included, are never touched. Returns the bytes released.
    public static func release() throws(SystemError) -> Int {
        let rc = evc_release_readonly_segments()
        if rc < 0 { throw SystemError(errno: Int32(-rc), context: "madvise(MADV_DONTNEED) on the read-only segments") }
        return rc
    }
}
