#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Vocabulary
import Udev

/// What `evcapture controls` shows: the camera, every control, and which system control binds
/// to which. Built from a real device; without one, why there is none.
public struct CameraControlsReport: Sendable {
    public struct Camera: Sendable {
        public var device: String
        public var identity: String
        public var card: String
        public var driver: String
        public var busInfo: String
    }

    public struct MenuItem: Sendable {
        public var index: Int64
        public var name: String
        public var value: Int64?
    }

    public struct Control: Sendable {
        public var id: String
        public var name: String
        public var title: String
        public var type: String
        public var minimum: Int64
        public var maximum: Int64
        public var step: UInt64
        public var `default`: Int64
        /// nil for write-only, string and compound controls, or when it cannot be read now.
        public var value: Int64?
        public var flags: [String]
        public var menu: [MenuItem]?
        /// The evcapture control bound to it ("zoom", "exposure-bias"), if any.
        public var binds: String?
    }

    public struct Bindings: Sendable {
        public var zoom: String?
        public var exposureBias: String?
    }

    public var camera: Camera?
    public var controls: [Control]
    public var bindings: Bindings
    /// Why there is no camera (nil when there is one).
    public var problem: String?
    /// Nodes looked at and why each was not used (automatic discovery without a camera).
    public var rejected: [String: String]

    /// Opens the selected camera and describes it; never throws: failures become ``problem``.
    public static func make(_ selector: CameraSelector) -> (report: CameraControlsReport, error: CameraDiscoveryError?) {
        let opened: OpenedCamera
        do {
            opened = try CameraDiscovery.open(selector)
        } catch {
            let report = CameraControlsReport(
                camera: nil, controls: [], bindings: Bindings(), problem: error.reason,
                rejected: Dictionary(error.rejected.map { ($0.node, $0.why) }, uniquingKeysWith: { a, _ in a }))
            return (report, error)
        }
        return (CameraControlsReport(opened), nil)
    }

    init(camera: Camera?, controls: [Control], bindings: Bindings, problem: String?, rejected: [String: String]) {
        self.camera = camera
        self.controls = controls
        self.bindings = bindings
        self.problem = problem
        self.rejected = rejected
    }

    init(_ opened: OpenedCamera) {
        let device = opened.device
        let bindings = CameraBindings(controls: opened.controls)
        let roles = bindings.roles
        camera = Camera(
            device: device.path, identity: opened.identity, card: device.capabilities.card,
            driver: device.capabilities.driver, busInfo: device.capabilities.busInfo)
        controls = opened.controls.map { d in
            let value: Int64? =
                d.hasIntegerValue && !d.flags.contains(.writeOnly) ? try? device.value(of: d) : nil
            return Control(
                id: String(cFormat: "0x%08x", d.id.rawValue), name: d.name,
                title: d.title, type: d.type.description, minimum: d.minimum, maximum: d.maximum, step: d.step,
                default: d.defaultValue, value: value, flags: d.flags.names,
                menu: d.type.hasMenu ? d.menu.map { MenuItem(index: $0.index, name: $0.name, value: $0.value) } : nil,
                binds: roles[d.id])
        }
        self.bindings = Bindings(zoom: bindings.zoomText, exposureBias: bindings.exposureBiasText)
        problem = nil
        rejected = [:]
    }

    /// The listing for a person, in the layout of `v4l2-ctl -L` plus the bindings.
    public var text: String {
        guard let camera else {
            var lines = [problem ?? "no camera"]
            for (node, why) in rejected.sorted(by: { $0.key < $1.key }) { lines.append("  \(node): \(why)") }
            return lines.joined(separator: "\n")
        }
        var lines = [
            "\(camera.card) (\(camera.driver), \(camera.busInfo)) at \(camera.device)",
            "identity: \(camera.identity)",
            "zoom: \(bindings.zoom ?? "not available")",
            "exposure-bias: \(bindings.exposureBias ?? "not available")",
            "",
        ]
        for c in controls {
            var line = "\(c.name.leftPadded(to: 32)) \(c.id) (\(c.type))".rightPadded(to: 58)
            line += ": min=\(c.minimum) max=\(c.maximum) step=\(c.step) default=\(c.default)"
            if let value = c.value { line += " value=\(value)" }
            if !c.flags.isEmpty { line += " flags=" + c.flags.joined(separator: ",") }
            if let binds = c.binds { line += "  ← \(binds)" }
            lines.append(line)
            for item in c.menu ?? [] { lines.append(String(repeating: " ", count: 36) + "\(item.index): \(item.name)") }
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// Right-aligned in `width` columns (as v4l2-ctl aligns control names).
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }

    /// Exactly `width` characters: padded with spaces on the right, or cut (as Foundation's
    /// `padding(toLength:withPad:startingAt:)`, without Foundation).
    package func rightPadded(to width: Int) -> String {
        count >= width ? String(prefix(width)) : self + String(repeating: " ", count: width - count)
    }
}
