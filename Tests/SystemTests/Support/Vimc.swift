import Foundation
import Testing

#if canImport(Glibc)
import Glibc
import EvcaptureTesting
#endif

/// vimc, the kernel's virtual media-controller camera, as the test VM has it: built by the
/// harness for the guest's kernel (Debian's does not ship it) and loaded by the guest's init
/// (Tests/System/README.md). libcamera's vimc pipeline handler drives it with its IPA module:
/// Sensor B → Debayer B → Scaler (×3) → `RGB/YUV Capture`, one camera named after the sensor.
enum Vimc {
    /// The platform device vimc registers for itself; unbinding it is vimc's hot-unplug.
    static let platformDevice = "vimc.0"
    static let driverDirectory = "/sys/bus/platform/drivers/vimc"
    /// The sensor libcamera's vimc handler uses, and so the camera's `Model`.
    static let sensorName = "Sensor B"
    /// The capture node libcamera streams from.
    static let captureName = "RGB/YUV Capture"

    /// The module the harness built (`EVCAPTURE_VIMC_MODULE`), for loading it again after an rmmod.
    static var modulePath: String? { ProcessInfo.processInfo.environment["EVCAPTURE_VIMC_MODULE"] }

    static var isLoaded: Bool { access("/sys/module/vimc", F_OK) == 0 }

    /// vimc's media device exists (the platform device is bound to the driver).
    static var isBound: Bool { access("\(driverDirectory)/\(platformDevice)", F_OK) == 0 }

    /// Why vimc cannot be used in this guest, or nil.
    static var problem: String? {
        if !isLoaded {
            return "vimc is not loaded (the harness builds it and the guest's init loads it: "
                + "see \"warning: vimc not built\" or \"cannot load vimc\" in the run's output)"
        }
        if !isBound { return "vimc is loaded but \(platformDevice) is not bound to it" }
        if captureNode() == nil { return "vimc has no \"\(captureName)\" video node" }
        return nil
    }

    /// `/dev/videoN` of vimc's `RGB/YUV Capture` (the third video device of vimc's
    /// v4l2_device: its sysfs `index` is not 0, unlike a webcam's capture node).
    static func captureNode() -> String? { node(prefix: "video", named: captureName) }

    /// `/dev/v4l-subdevN` of a vimc entity (`Sensor B`).
    static func subdevNode(named name: String) -> String? { node(prefix: "v4l-subdev", named: name) }

    private static func node(prefix: String, named name: String) -> String? {
        let classDir = "/sys/class/video4linux"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: classDir)) ?? []
        for entry in entries.sorted() where entry.hasPrefix(prefix) {
            let found = try? String(contentsOfFile: "\(classDir)/\(entry)/name", encoding: .utf8)
            if found?.trimmingCharacters(in: .whitespacesAndNewlines) == name, access("/dev/\(entry)", F_OK) == 0 {
                return "/dev/\(entry)"
            }
        }
        return nil
    }

    /// The minor number of `/dev/videoN` (what the kernel's v4l2 trace events name a node by).
    static func minor(of node: String) -> Int? {
        let name = (node as NSString).lastPathComponent
        guard let dev = try? String(contentsOfFile: "/sys/class/video4linux/\(name)/dev", encoding: .utf8) else { return nil }
        return dev.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last.flatMap { Int($0) }
    }

    /// Unplugs vimc as a driver unbind does (its media and video nodes go away; a stream on
    /// them ends); waits until the capture node is gone.
    static func unbind(timeout: Duration = .seconds(10)) throws -> Bool {
        try write(platformDevice, to: "\(driverDirectory)/unbind")
        return pollUntil(timeout: timeout) { captureNode() == nil }
    }

    /// Plugs vimc back in; waits until its capture node exists again.
    static func bind(timeout: Duration = .seconds(10)) throws -> Bool {
        if !isBound { try write(platformDevice, to: "\(driverDirectory)/bind") }
        guard pollUntil(timeout: timeout, { captureNode() != nil }) else { return false }
        // libcamera takes a media device only when udev has handled all of its nodes.
        return try run("udevadm", "settle", "--timeout=30").succeeded
    }

    /// Removes the module (`rmmod vimc`); fails while a node of it is open.
    static func remove() throws -> ProgramResult { try run("rmmod", "vimc") }

    /// Loads the harness's module again (the chroot's modprobe would look for the host
    /// kernel's modules; vimc's dependencies stay loaded) and waits for its capture node.
    static func load(timeout: Duration = .seconds(10)) throws -> Bool {
        guard let path = modulePath else { return false }
        let result = try run("insmod", path)
        guard result.succeeded else { return false }
        return pollUntil(timeout: timeout) { captureNode() != nil }
    }

    private static func write(_ text: String, to path: String) throws {
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw ProcessError(argv: ["write", path], problem: "cannot open for writing")
        }
        defer { try? handle.close() }
        try handle.write(contentsOf: Data(text.utf8))
    }
}

/// The kernel's `v4l2:v4l2_dqbuf` trace event, recorded in a tracing instance of its own:
/// every buffer any process dequeues from a V4L2 node, with the node's minor, the buffer's
/// sequence and its timestamp as the driver set it. An independent witness of what libcamera
/// read from the kernel.
final class DequeueTrace {
    struct Event: Sendable, Equatable {
        var minor: Int
        var sequence: UInt32
        /// ns, as the V4L2 buffer carries it (µs resolution: a timeval).
        var timestamp: Int64
    }

    private let instance: String

    init() throws {
        let tracing = "/sys/kernel/tracing"
        if access("\(tracing)/instances", F_OK) != 0 {
            let mounted = try run("mount", "-t", "tracefs", "nodev", tracing)
            guard mounted.succeeded else { throw ProcessError(argv: ["mount", "tracefs"], problem: "\(mounted)") }
        }
        instance = "\(tracing)/instances/evc-dqbuf-\(getpid())"
        _ = rmdir(instance)
        guard mkdir(instance, 0o755) == 0 else {
            throw ProcessError(argv: ["mkdir", instance], problem: String(cString: strerror(errno)))
        }
        try Data("1".utf8).write(to: URL(fileURLWithPath: "\(instance)/events/v4l2/v4l2_dqbuf/enable"))
    }

    deinit {
        try? Data("0".utf8).write(to: URL(fileURLWithPath: "\(instance)/events/v4l2/v4l2_dqbuf/enable"))
        _ = rmdir(instance)
    }

    /// The events recorded so far.
    func events() throws -> [Event] {
        let text = try String(contentsOfFile: "\(instance)/trace", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> Event? in
            guard line.contains("v4l2_dqbuf:") else { return nil }
            func field(_ name: String) -> Int64? {
                guard let range = line.range(of: "\(name) = ") else { return nil }
                return Int64(line[range.upperBound...].prefix { $0.isNumber })
            }
            guard let minor = field("minor"), let sequence = field("sequence"), let timestamp = field("timestamp")
            else { return nil }
            return Event(minor: Int(minor), sequence: UInt32(sequence), timestamp: timestamp)
        }
    }
}
