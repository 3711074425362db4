import Testing

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
