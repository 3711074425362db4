import Foundation

#if canImport(Glibc)
import Glibc
import EvcaptureTesting
#endif

/// The fake UVC camera (`Tests/System/fakeuvc/fakeuvc.c`) as a test sees it: a USB device
/// plugged in through dummy_hcd + gadgetfs, driven by the kernel's real uvcvideo driver.
///
/// Controls (V4L2 names): `zoom_absolute` 100...500 (default 100), `auto_exposure` menu
/// (0 auto, default; 1 manual), `exposure_time_absolute` 3...2047 (default 250),
/// `brightness` -64...64 (default 0). Every value the camera receives is in ``received()``.
///
/// There is one virtual USB cable: one `FakeCamera` may run at a time in the guest (the
/// harness runs tests serially). `start()` after `stop()` is a replug.
final class FakeCamera {
    /// uvcvideo names the device after the USB product string.
    static let cardName = "evcapture fake camera"
    static let usbVendor = "1209"
    static let usbProduct = "0001"

    /// The capture node (`/dev/videoN`) while running.
    private(set) var node: String?

    private let executable: String
    private var process: TestChild?
    private var logURL: URL?
    private let scratch: ScratchDirectory
    private var starts = 0

    /// - Parameter executable: the fake camera program; default `$EVCAPTURE_FAKEUVC`.
    init(executable: String? = nil) throws {
        guard let program = executable ?? SystemTestEnvironment.fakeCameraExecutable else {
            throw FakeCameraError("EVCAPTURE_FAKEUVC is not set (run the system tests with Tests/System/run)")
        }
        self.executable = program
        scratch = try ScratchDirectory(prefix: "fakeuvc")
    }

    deinit {
        try? stop()
    }

    /// Plugs the camera in and returns its node once uvcvideo has bound to it.
    ///
    /// GadgetFS can lose a request when the host sends the next one before the camera has
    /// read the previous (see fakeuvc.c); uvcvideo then gives up on the device. Such a
    /// failed bind is unplugged and retried, up to three attempts within `timeout`.
    @discardableResult
    func start(timeout: Duration = .seconds(15)) throws -> String {
        if let node, process?.isRunning == true { return node }
        let deadline = ContinuousClock.now + timeout
        var failures: [String] = []
        for attempt in 1...3 {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            let attemptBudget = attempt == 3 ? left : min(left, .seconds(8))
            switch try attemptStart(timeout: attemptBudget) {
            case .bound(let found):
                node = found
                // let udev finish with the new node (permissions, /dev/v4l links)
                _ = try? run("udevadm", "settle", "--timeout=10", timeout: .seconds(15))
                return found
            case .failed(let why):
                failures.append("attempt \(attempt): \(why)")
                try stop()
            }
        }
        throw FakeCameraError(
            "the fake camera did not appear as a V4L2 device within \(timeout)\n"
                + failures.joined(separator: "\n") + "\n--- camera output\n" + log)
    }

    /// Unplugs the camera and waits until its node and its USB device are gone: first the
    /// gadget's soft disconnect (the host sees the USB device go, and dummy_hcd ends the
    /// control requests in flight while GadgetFS is still bound), then SIGTERM (the program
    /// closes GadgetFS). Closing GadgetFS with a control request in flight makes Debian 12's
    /// kernel oops in `ep0_complete` (the request is completed after GadgetFS has let go of
    /// its data: seen once, when a test unplugged the camera while a session read a control),
    /// and no fake camera can be plugged in again in that boot.
    func stop(timeout: Duration = .seconds(10)) throws {
        defer {
            process = nil
            node = nil
        }
        guard let process else { return }
        if process.isRunning {
            if let udc = Self.softConnect(), (try? "disconnect".write(toFile: udc, atomically: false, encoding: .utf8)) != nil {
                _ = pollUntil(timeout: timeout) { !Self.usbDevicePresent() }
            }
            process.terminate(timeout: timeout)
        }
        let gone = pollUntil(timeout: timeout) { Self.currentNode() == nil && !Self.usbDevicePresent() }
        if !gone {
            throw FakeCameraError("the fake camera's node or USB device is still there \(timeout) after it stopped")
        }
    }

    /// Whether the camera program is running.
    var isRunning: Bool { process?.isRunning == true }

    /// Makes the camera stop answering (SIGUSR1): control requests get neither data nor
    /// status, so a GET waits for uvcvideo's 5 s timeout. A SET_CUR still completes at the
    /// host (GadgetFS takes its data stage in the kernel) but the camera ignores it, logged
    /// as `fakeuvc: hung: SET_CUR zoom_absolute`. Returns once the camera says so.
    func hang(timeout: Duration = .seconds(5)) throws {
        try signal(SIGUSR1, until: "fakeuvc: not answering", timeout: timeout)
    }

    /// Makes a hung camera answer again (SIGUSR2); returns once the camera says so.
    func answer(timeout: Duration = .seconds(5)) throws {
        try signal(SIGUSR2, until: "fakeuvc: answering", timeout: timeout)
    }

    /// Requests the hung camera left without an answer, as `GET_CUR exposure_time_absolute`.
    var unanswered: [String] { unansweredAt.map(\.request) }

    /// As ``unanswered``, with when each came (CLOCK_MONOTONIC seconds, the daemon's clock).
    var unansweredAt: [(request: String, time: Double)] {
        log.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("fakeuvc: hung: "), let at = line.range(of: " at ", options: .backwards) else { return nil }
            return (String(line[line.index(line.startIndex, offsetBy: 15)..<at.lowerBound]), Double(line[at.upperBound...]) ?? 0)
        }
    }

    private func signal(_ signo: Int32, until line: String, timeout: Duration) throws {
        guard let process, process.isRunning else { throw FakeCameraError("the fake camera is not running") }
        let before = log.components(separatedBy: line).count
        kill(process.pid, signo)
        guard pollUntil(timeout: timeout, { log.components(separatedBy: line).count > before }) else {
            throw FakeCameraError("the fake camera did not say \"\(line)\" within \(timeout)\n\(log)")
        }
    }

    /// Every SET_CUR the camera received since the last `start()`, in order, as
    /// (V4L2 control name, value). `auto_exposure` values are V4L2 menu indexes (0 auto, 1 manual).
    func received() -> [(control: String, value: Int)] {
        log.split(separator: "\n").compactMap { line in
            // "fakeuvc: SET_CUR zoom_absolute = 300"
            let words = line.split(separator: " ")
            guard words.count == 5, words[0] == "fakeuvc:", words[1] == "SET_CUR", words[3] == "=",
                let value = Int(words[4])
            else { return nil }
            return (String(words[2]), value)
        }
    }

    /// Waits until the camera has received `value` for `control` (the camera prints a
    /// request just after the driver's ioctl has returned).
    func waitUntilReceived(_ control: String, _ value: Int, timeout: Duration = .seconds(5)) -> Bool {
        pollUntil(timeout: timeout) { received().contains { $0.control == control && $0.value == value } }
    }

    /// Lines in which the camera reports a control request it could not complete (GadgetFS
    /// aborted it, or a SET_CUR's data never arrived). Empty in a healthy run; a test that
    /// depends on every write arriving can `#expect(camera.problems.isEmpty)`.
    var problems: [String] {
        log.split(separator: "\n").map(String.init).filter { $0.contains(" lost") || $0.contains("aborted") }
    }

    /// The camera's output since the last `start()` (SET_CUR lines and messages).
    var log: String {
        guard let logURL else { return "" }
        return (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
    }

    /// The fake camera's capture node, if one exists now.
    static func currentNode() -> String? {
        VideoNodes.node { $0.hasPrefix(cardName) }
    }

    // MARK: - Starting

    private enum StartOutcome {
        case bound(String)
        case failed(String)
    }

    private func attemptStart(timeout: Duration) throws -> StartOutcome {
        starts += 1
        let logURL = scratch.url.appendingPathComponent("fakeuvc-\(starts).log")
        self.logURL = logURL
        let process = try TestChild([executable], log: logURL.path)
        self.process = process

        var unboundSince: ContinuousClock.Instant?
        var outcome: StartOutcome = .failed("no /dev/video node after \(timeout)")
        _ = pollUntil(timeout: timeout) {
            if let node = Self.currentNode() {
                outcome = .bound(node)
                return true
            }
            if !process.isRunning {
                outcome = .failed("fakeuvc exited with status \(process.exitStatus ?? -1)")
                return true
            }
            // configured, but no driver on the video interface for a while: uvcvideo's
            // probe failed (a bound driver's link appears when its probe has finished)
            if Self.interfaceBound() == false {
                let since = unboundSince ?? ContinuousClock.now
                unboundSince = since
                if ContinuousClock.now - since > .seconds(5) {
                    outcome = .failed("uvcvideo did not bind to the USB device")
                    return true
                }
            } else {
                unboundSince = nil
            }
            return false
        }
        return outcome
    }

    // MARK: - sysfs

    /// `/sys/bus/usb/devices/<port>` of the fake camera, if it is enumerated.
    private static func usbDevicePath() -> String? {
        let base = "/sys/bus/usb/devices"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        for entry in entries where !entry.contains(":") {
            let dir = "\(base)/\(entry)"
            if read("\(dir)/idVendor") == usbVendor, read("\(dir)/idProduct") == usbProduct { return dir }
        }
        return nil
    }

    private static func usbDevicePresent() -> Bool { usbDevicePath() != nil }

    /// The dummy UDC's `soft_connect` (udc-core: `disconnect` drops the pull-up and stops the
    /// controller, the next gadget driver's bind starts it again).
    private static func softConnect() -> String? {
        let base = "/sys/class/udc"
        let udc = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).first { $0.hasPrefix("dummy_udc") }
        return udc.map { "\(base)/\($0)/soft_connect" }
    }

    /// Whether a driver is bound to the camera's VideoControl interface (`<port>:1.0`);
    /// nil while that interface does not exist (not enumerated or not configured yet).
    private static func interfaceBound() -> Bool? {
        guard let device = usbDevicePath() else { return nil }
        let port = (device as NSString).lastPathComponent
        let interface = "\(device)/\(port):1.0"
        guard FileManager.default.fileExists(atPath: interface) else { return nil }
        return FileManager.default.fileExists(atPath: "\(interface)/driver")
    }

    private static func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The fake camera could not be started or stopped.
struct FakeCameraError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
