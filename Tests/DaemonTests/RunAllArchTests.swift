import EvcaptureTesting
import Foundation
import Testing
import Recording

/// On a Raspberry Pi (arm64; docs/raspberry-pi.md) the VM tier says it needs x86_64, before installing
/// anything, with its own exit status that Tests/run-all reports as skipped.
@Suite struct RunAllArchTests {
    @Test func theVMTierSaysItNeedsX86_64() throws {
        let repo = Fixtures.repository
        let shim = try temporaryDirectory()
        // Written with O_CLOEXEC (AtomicFile): a descriptor open for writing that leaks into a
        // child spawned by a parallel test would make exec fail with ETXTBSY.
        let file = try AtomicFile(directory: shim, finalName: "uname")
        try file.write(Array("#!/bin/sh\n[ \"$1\" = -m ] && { echo aarch64; exit 0; }\nexec /usr/bin/uname \"$@\"\n".utf8))
        chmod(try file.commit(), 0o755)
        var env = ProcessInfo.processInfo.environment
        env["PATH"] = shim + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        let result = try runProgram(repo + "/Tests/System/run", ["--no-build"], environment: env)
        let text = result.stderr
        #expect(result.status == 4)
        #expect(text.hasPrefix("systest: the system tests (the QEMU VM tier) need an x86_64 host; this machine is aarch64.\n"))
        // run-all turns status 4 into "skipped" and still counts the other tiers.
        let runAll = try String(contentsOfFile: repo + "/Tests/run-all", encoding: .utf8)
        #expect(runAll.contains("if [ \"$system_status\" = 4 ]; then"))
    }
}
