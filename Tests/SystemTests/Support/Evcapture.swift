import Foundation

extension SystemTestEnvironment {
    /// The `evcapture` executable built with the test bundle: `$EVCAPTURE_EXECUTABLE`, else
    /// the one next to the running bundle (`.build/debug/`; the bundle is an executable on
    /// Linux, so `/proc/self/exe` names it wherever it was started from).
    static var evcaptureExecutable: String {
        if let path = ProcessInfo.processInfo.environment["EVCAPTURE_EXECUTABLE"], !path.isEmpty { return path }
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: bundle).deletingLastPathComponent().appendingPathComponent("evcapture").path
    }
}
