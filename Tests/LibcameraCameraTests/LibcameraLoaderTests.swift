import CLibcameraLoader
import Dispatch
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import LibcameraCamera

/// The bridge opened on first use (docs/libcamera.md, "Loading"): what the loader says when
/// the shared object is missing or is not a bridge, and that the one built with the tests is.
@Suite struct LibcameraLoaderTests {
    @Test func aMissingBridgeIsOneLineNamingThePath() throws {
        let error = try #require(Libcamera.checkBridge(at: "/nonexistent/libevcapture-libcamera.so"))
        #expect(error.message.hasPrefix("cannot load /nonexistent/libevcapture-libcamera.so: "), "\(error)")
        #expect(error.message.contains("No such file"), "\(error)")
        #expect(!error.message.contains("\n"))
    }

    @Test func aSharedObjectThatIsNotTheBridgeIsRefused() throws {
        let error = try #require(Libcamera.checkBridge(at: "libm.so.6"))
        #expect(error.message == "libm.so.6 is not evcapture's libcamera bridge (no evc_lc_bridge_interface)", "\(error)")
    }

    @Test func theBridgeBuiltWithTheTestsLoads() {
        // The build puts libevcapture-libcamera.so next to the test binary, where the loader looks first.
        #expect(Libcamera.loadBridge() == nil)
        #expect(Libcamera.compiledVersion.split(separator: ".").count == 3, "\(Libcamera.compiledVersion)")
    }
}

/// libcamera logs from its own threads (the camera manager's, a pipeline handler's) into the
/// bridge's filter with no lock of its own (docs/libcamera.md#loading): lines written at once
/// from several threads come out whole, each ERROR line once, no other line at all. With one
/// line buffer shared by the threads they came out torn, or the process died.
@Suite struct LibcameraLogFilterTests {
    @Test func errorLinesFromManyThreadsComeOutWhole() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            guard Libcamera.loadBridge() == nil else { exit(3) }
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for n in 0..<2000 {
                    evc_lc_log_write(
                        "[0:00:01.000000000] [\(thread)] ERROR Evc evc-log-test thread \(thread) line \(n) of a longer message\n")
                    evc_lc_log_write("[0:00:01.000000000] [\(thread)] INFO Evc evc-log-test dropped \(thread) \(n)\n")
                }
            }
        }
        let lines = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self).split(separator: "\n")
            .filter { $0.contains("evc-log-test") }
        var expected = Set<String>()
        for thread in 0..<8 {
            for n in 0..<2000 {
                expected.insert("[0:00:01.000000000] [\(thread)] ERROR Evc evc-log-test thread \(thread) line \(n) of a longer message")
            }
        }
        let torn = lines.filter { !expected.contains(String($0)) }
        #expect(torn.isEmpty, "\(torn.count) torn lines, the first: \(torn.prefix(3))")
        #expect(Set(lines.map(String.init)) == expected && lines.count == expected.count, "\(lines.count) lines")
    }
}
