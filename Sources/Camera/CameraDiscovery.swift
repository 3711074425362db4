#if canImport(Glibc)
import Glibc
#endif
import Udev
import V4L2

/// Which camera the session uses.
public enum CameraSelector: Hashable, Sendable {
    /// The first capture node (index 0) that has a zoom or exposure control.
    case automatic
    /// A node the person named: `/dev/video2`, or a `/dev/v4l/by-id/…` link.
    case path(String)
}

/// A camera opened for the session, with its controls as found at opening.
public struct OpenedCamera: Sendable {
    public var device: V4L2Device
    public var controls: [ControlDescription]
    /// The by-id path when there is one, else bus info and card (`usb-0000:00:14.0-1 HD Webcam`).
    public var identity: String
    /// Bus info and card, whatever the identity: what a node the kernel announced (without
    /// udev's links) is compared with.
    public var busAndCard: String { CameraDiscovery.fallbackIdentity(of: device) }
}

/// Why no camera was opened: the overall reason, and each node looked at with why it was not used.
public struct CameraDiscoveryError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public var rejected: [(node: String, why: String)]
    /// The error from opening a named camera (nil for automatic discovery).
    public var underlying: V4L2Error?

    public var description: String {
        ([reason] + rejected.map { "  \($0.node): \($0.why)" }).joined(separator: "\n")
    }
}

/// The video nodes discovery looks at, and where the list came from.
public struct CameraCandidates: Sendable {
    public enum Source: String, Sendable {
        /// libudev's enumeration of the `video4linux` subsystem (with udevd: its properties
        /// and links; without: the kernel's and sysfs's facts only).
        case udev
        /// The `/sys/class/video4linux` scan: libudev could not enumerate.
        case sysfs
    }
    /// `/dev/video*` nodes in node-number order.
    public var nodes: [VideoNode]
    public var source: Source
    /// Why libudev could not enumerate (source `sysfs`).
    public var udevProblem: String?
}

extension VideoNode {
    /// The facts discovery uses from udev's description of a node.
    public init(_ device: UdevVideoDevice) {
        let sysname = device.syspath.split(separator: "/").last.map(String.init) ?? device.node
        self.init(
            path: device.node, name: device.name ?? device.properties["ID_V4L_PRODUCT"] ?? sysname,
            index: device.index, byID: device.byID, udevCapabilities: device.capabilities)
    }
}

/// Finding and re-finding cameras through udev: the `video4linux` subsystem, capture nodes
/// (`ID_V4L_CAPABILITIES`), identity from the `/dev/v4l/by-id/…` link in `DEVLINKS`. When
/// libudev cannot enumerate, the sysfs scan (``videoNodes(sysfs:dev:byID:)``) stands in.
public enum CameraDiscovery {
    /// The nodes to look at: udev's enumeration, or the sysfs scan when libudev fails.
    public static func candidates() -> CameraCandidates {
        do {
            let devices = try UdevVideoMonitor.enumerateNow()
            return CameraCandidates(nodes: devices.map(VideoNode.init), source: .udev)
        } catch {
            return CameraCandidates(nodes: videoNodes(), source: .sysfs, udevProblem: "\(error)")
        }
    }

    /// Opens the camera `selector` names.
    public static func open(_ selector: CameraSelector) throws(CameraDiscoveryError) -> OpenedCamera {
        switch selector {
        case .path(let path):
            do {
                // A link (`/dev/v4l/by-id/…`) is opened as the node it leads to, so the device
                // reads /dev/videoN as it will after a replug; the link stays the identity.
                let device = try V4L2Device(path: resolvedNode(path))
                guard device.capabilities.canCapture else {
                    throw CameraDiscoveryError(
                        reason: "\(path) (\(device.capabilities.card)) is not a video capture device", rejected: [])
                }
                let controls = try device.controls()
                return OpenedCamera(device: device, controls: controls, identity: identity(of: device, namedAs: path))
            } catch let error as V4L2Error {
                throw CameraDiscoveryError(reason: "cannot use camera \(path): \(error)", rejected: [], underlying: error)
            } catch let error as CameraDiscoveryError {
                throw error
            } catch {
                throw CameraDiscoveryError(reason: "cannot use camera \(path): \(error)", rejected: [])
            }
        case .automatic:
            let found = candidates()
            guard !found.nodes.isEmpty else {
                throw CameraDiscoveryError(reason: "no camera: there is no /dev/video* device", rejected: [])
            }
            var rejected: [(String, String)] = []
            for node in found.nodes {
                if let why = passedOver(node) {
                    rejected.append((node.path, why))
                    continue
                }
                do {
                    let device = try V4L2Device(path: node.path)
                    guard device.capabilities.canCapture else {
                        rejected.append((node.path, "\(device.capabilities.card): not a video capture device"))
                        continue
                    }
                    let controls = try device.controls()
                    let bindings = CameraBindings(controls: controls)
                    guard bindings.zoom != nil || bindings.exposureBias != .unavailable else {
                        rejected.append((node.path, "\(device.capabilities.card): no zoom or exposure controls"))
                        continue
                    }
                    return OpenedCamera(
                        device: device, controls: controls, identity: node.byID ?? fallbackIdentity(of: device))
                } catch {
                    rejected.append(
                        (
                            node.path,
                            error.code == .permissionDenied
                                ? "permission denied (is this user in the video group, or do the udev rules apply?)"
                                : "\(error)"
                        ))
                }
            }
            let allDenied = rejected.allSatisfy { $0.1.hasPrefix("permission denied") }
            throw CameraDiscoveryError(
                reason: allDenied
                    ? "no camera: permission denied on every /dev/video* device"
                    : "no camera: no video capture device with zoom or exposure controls",
                rejected: rejected)
        }
    }

    /// Why `node` is not a camera candidate, from what udev (or sysfs) says without opening
    /// it; nil when only opening it can tell.
    static func passedOver(_ node: VideoNode) -> String? {
        if let capabilities = node.udevCapabilities, !capabilities.contains("capture") {
            let words = capabilities.sorted().joined(separator: ":")
            return "\(node.name): not a video capture device (udev: ID_V4L_CAPABILITIES=:\(words)\(words.isEmpty ? "" : ":"))"
        }
        if let index = node.index, index != 0 {
            return "index \(index) (a secondary node, such as metadata)"
        }
        return nil
    }

    /// Whether `node` may be the camera with `identity`, judged without opening it: not when
    /// udev's facts rule it out (a secondary or non-capture node, another by-id link).
    /// `busAndCard` (``OpenedCamera/busAndCard`` of the camera when it was last open) lets a
    /// node the kernel announced without udev's facts be checked by opening it.
    public static func mayBe(_ node: VideoNode, identity: String, busAndCard: String? = nil) -> Bool {
        if passedOver(node) != nil { return false }
        guard identity.hasPrefix("/dev/") else { return true }  // bus info and card: open to know
        if matchesLink(node, identity) { return true }
        // A kernel event (no udevd, or before it ran its rules): no links to compare.
        return node.byID == nil && node.udevCapabilities == nil && busAndCard != nil
    }

    /// Opens `node` as the camera with `identity`: nil when it turns out to be another
    /// device (bus info and card differ) or not a capture device.
    public static func open(_ node: VideoNode, as identity: String, busAndCard: String? = nil) throws(V4L2Error)
        -> OpenedCamera?
    {
        let byLink = identity.hasPrefix("/dev/") && matchesLink(node, identity)
        let device = try V4L2Device(path: node.path)
        guard device.capabilities.canCapture else { return nil }
        if !byLink {
            let expected = identity.hasPrefix("/dev/") ? busAndCard : identity
            guard let expected, fallbackIdentity(of: device) == expected else { return nil }
        }
        return OpenedCamera(device: device, controls: try device.controls(), identity: identity)
    }

    /// Whether the by-id link `identity` is `node`'s (udevd makes the links before it
    /// announces the device, so a returning camera's link already leads to its new node).
    private static func matchesLink(_ node: VideoNode, _ identity: String) -> Bool {
        node.byID == identity || resolvedNode(identity) == node.path
    }

    /// Opens the camera with `identity` again, if it is present now (one look at the
    /// candidates; the session waits for udev's `add` instead of calling this repeatedly).
    public static func reopen(identity: String) -> OpenedCamera? {
        for node in candidates().nodes where mayBe(node, identity: identity) {
            if let opened = try? open(node, as: identity) { return opened }
        }
        return nil
    }

    /// The identity of an opened device: the by-id link (the path itself when it is one),
    /// else bus info and card.
    static func identity(of device: V4L2Device, namedAs path: String) -> String {
        if path.hasPrefix("/dev/v4l/by-id/") { return path }
        // The by-id directory, not `candidates()`: libudev's enumeration walks every video
        // device's sysfs path component by component, the longest step before READY=1 (~2 s
        // of a 3.4 s start under strace in the test VM; BENCHMARKS.md, "start").
        return byIDLink(to: resolvedNode(path)) ?? fallbackIdentity(of: device)
    }

    /// Bus info and card (`usb-0000:00:14.0-1 HD Webcam`): the identity without a by-id link.
    static func fallbackIdentity(of device: V4L2Device) -> String {
        "\(device.capabilities.busInfo) \(device.capabilities.card)"
    }
}

/// Which V4L2 controls the system sliders drive on a camera.
public struct CameraBindings: Sendable, Hashable {
    /// How the system exposure-bias slider reaches the camera.
    public enum ExposureBias: Sendable, Hashable {
        /// `V4L2_CID_AUTO_EXPOSURE_BIAS`.
        case native(ControlDescription)
        /// No bias control: manual mode on `V4L2_CID_EXPOSURE_AUTO` and base × 2^EV on
        /// `V4L2_CID_EXPOSURE_ABSOLUTE` (the math lives with the controls).
        case emulated(auto: ControlDescription, time: ControlDescription)
        case unavailable
    }

    /// `V4L2_CID_ZOOM_ABSOLUTE`, when the camera has it.
    public var zoom: ControlDescription?
    public var exposureBias: ExposureBias

    public init(controls: [ControlDescription]) {
        let byID = Dictionary(controls.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        zoom = byID[.zoomAbsolute]
        let method = ExposureBiasMethod { id in byID[id].map { CameraControlInfo($0, value: 0) } }
        switch method {
        case .native: exposureBias = byID[.autoExposureBias].map(ExposureBias.native) ?? .unavailable
        case .emulated:
            exposureBias = .emulated(auto: byID[.exposureAuto]!, time: byID[.exposureAbsolute]!)
        case .unavailable: exposureBias = .unavailable
        }
    }

    /// The controls the session follows (subscribes to).
    var boundControls: [ControlID] {
        var ids: [ControlID] = []
        if let zoom { ids.append(zoom.id) }
        switch exposureBias {
        case .native(let bias): ids.append(bias.id)
        case .emulated(let auto, let time): ids += [auto.id, time.id]
        case .unavailable: break
        }
        return ids
    }

    /// What each bound V4L2 control does, by control id, for listings ("zoom", "exposure-bias").
    public var roles: [ControlID: String] {
        var out: [ControlID: String] = [:]
        if let zoom { out[zoom.id] = "zoom" }
        switch exposureBias {
        case .native(let bias): out[bias.id] = "exposure-bias"
        case .emulated(let auto, let time):
            out[auto.id] = "exposure-bias (emulated: manual mode)"
            out[time.id] = "exposure-bias (emulated: base × 2^EV)"
        case .unavailable: break
        }
        return out
    }

    /// The binding of the system zoom slider, as text (`zoom_absolute`), nil when unbound.
    var zoomText: String? { zoom?.name }
    /// The binding of the exposure-bias slider, as text, nil when unbound.
    var exposureBiasText: String? {
        switch exposureBias {
        case .native(let bias): bias.name
        case .emulated(let auto, let time): "emulated: \(auto.name) + \(time.name)"
        case .unavailable: nil
        }
    }
}
