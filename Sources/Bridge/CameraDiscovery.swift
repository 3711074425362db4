#if canImport(Glibc)
import Glibc
#endif
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

/// Finding and re-finding cameras. The scan reads `/sys/class/video4linux` and
/// `/dev/v4l/by-id` (see ``videoNodes(sysfs:dev:byID:)``); udev gives the same facts when present.
public enum CameraDiscovery {
    /// Opens the camera `selector` names.
    public static func open(_ selector: CameraSelector) throws(CameraDiscoveryError) -> OpenedCamera {
        switch selector {
        case .path(let path):
            do {
                let device = try V4L2Device(path: path)
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
            let nodes = videoNodes()
            guard !nodes.isEmpty else {
                throw CameraDiscoveryError(reason: "no camera: there is no /dev/video* device", rejected: [])
            }
            var rejected: [(String, String)] = []
            for node in nodes {
                if let index = node.index, index != 0 {
                    rejected.append((node.path, "index \(index) (a secondary node, such as metadata)"))
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
                    return OpenedCamera(device: device, controls: controls, identity: identity(of: device, namedAs: node.path))
                } catch {
                    rejected.append((node.path, error.code == .permissionDenied
                        ? "permission denied (is this user in the video group, or do the udev rules apply?)"
                        : "\(error)"))
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

    /// Opens the camera with `identity` again, if it is present: the by-id link when the
    /// identity is one, else the capture node whose bus info and card match.
    public static func reopen(identity: String) -> OpenedCamera? {
        if identity.hasPrefix("/dev/") {
            // Opened as the node it points to, so the device path reads /dev/videoN.
            guard let device = try? V4L2Device(path: resolvedNode(identity)), device.capabilities.canCapture,
                let controls = try? device.controls()
            else { return nil }
            return OpenedCamera(device: device, controls: controls, identity: identity)
        }
        for node in videoNodes() where node.index == nil || node.index == 0 {
            guard let device = try? V4L2Device(path: node.path), device.capabilities.canCapture,
                Self.identity(of: device, namedAs: node.path) == identity, let controls = try? device.controls()
            else { continue }
            return OpenedCamera(device: device, controls: controls, identity: identity)
        }
        return nil
    }

    /// The identity of an opened device: the by-id link (the path itself when it is one),
    /// else bus info and card.
    static func identity(of device: V4L2Device, namedAs path: String) -> String {
        if path.hasPrefix("/dev/v4l/by-id/") { return path }
        let node = resolvedNode(path)
        if let link = videoNodes().first(where: { $0.path == node })?.byID { return link }
        return "\(device.capabilities.busInfo) \(device.capabilities.card)"
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
        if let bias = byID[.autoExposureBias] {
            exposureBias = .native(bias)
        } else if let auto = byID[.exposureAuto], let time = byID[.exposureAbsolute],
            auto.menu.isEmpty || auto.menu.contains(where: { $0.index == 1 })
        {
            exposureBias = .emulated(auto: auto, time: time)
        } else {
            exposureBias = .unavailable
        }
    }

    /// The controls the session follows (subscribes to).
    public var boundControls: [ControlID] {
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
    public var zoomText: String? { zoom?.name }
    /// The binding of the exposure-bias slider, as text, nil when unbound.
    public var exposureBiasText: String? {
        switch exposureBias {
        case .native(let bias): bias.name
        case .emulated(let auto, let time): "emulated: \(auto.name) + \(time.name)"
        case .unavailable: nil
        }
    }
}
