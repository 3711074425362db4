import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Where the system tests run and what the kernel offers them.
///
/// System tests need a kernel they may change: virtual input devices (`/dev/uinput`), V4L2
/// devices (vivid, the fake UVC camera). `Tests/System/run` boots one in QEMU and runs
/// them there with `EVCAPTURE_SYSTEST=1`. Anywhere else (`swift test` on a workstation or
/// in CI) they skip with ``skipReason``, so they never create devices on a real desktop.
enum SystemTestEnvironment {
    /// True inside the harness's guest (`Tests/System/run` sets `EVCAPTURE_SYSTEST=1`).
    static var isGuest: Bool { environment["EVCAPTURE_SYSTEST"] == "1" }

    /// `/dev/uinput` exists and can be opened for reading and writing.
    static var uinputUsable: Bool { access("/dev/uinput", R_OK | W_OK) == 0 }

    /// The fake camera program (`EVCAPTURE_FAKEUVC`), built by the harness.
    static var fakeCameraExecutable: String? { environment["EVCAPTURE_FAKEUVC"] }

    /// Why system tests cannot run here, or nil when they can.
    static var skipReason: String? {
        if !isGuest {
            return "system test: runs only in the test VM (Tests/System/run); EVCAPTURE_SYSTEST is not 1 here"
        }
        if !uinputUsable {
            return "system test: /dev/uinput is missing or not writable in this guest"
        }
        return nil
    }

    /// Why the fake camera cannot be used here, or nil when it can.
    static var fakeCameraSkipReason: String? {
        if let reason = skipReason { return reason }
        guard let program = fakeCameraExecutable, access(program, X_OK) == 0 else {
            return "system test: EVCAPTURE_FAKEUVC does not name an executable fake camera"
        }
        guard access("/dev/gadget/dummy_udc", R_OK | W_OK) == 0 else {
            return "system test: no /dev/gadget/dummy_udc (dummy_hcd and gadgetfs not set up)"
        }
        return nil
    }

    private static var environment: [String: String] { ProcessInfo.processInfo.environment }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test or suite only in the system-test VM; elsewhere it is skipped with the reason.
    static var systemTest: Self {
        .enabled(
            if: SystemTestEnvironment.skipReason == nil,
            Comment(rawValue: SystemTestEnvironment.skipReason ?? "system test"))
    }

    /// Like ``systemTest``, and the fake UVC camera must be available too.
    static var needsFakeCamera: Self {
        .enabled(
            if: SystemTestEnvironment.fakeCameraSkipReason == nil,
            Comment(rawValue: SystemTestEnvironment.fakeCameraSkipReason ?? "needs the fake camera"))
    }
}
