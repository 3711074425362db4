/// One evdev node as udev (or the kernel) describes it.
public struct UdevInputDevice: UdevDeviceKind {
    public static var subsystem: String { "input" }
    /// `event*` only: `input*` has no node, `mouse*` and `js*` are legacy interfaces.
    public static var sysnamePrefix: String { "event" }
    public static var nodeDirectory: String { "/dev/input" }

    /// `/dev/input/eventN`.
    public var node: String
    /// `/sys/devices/.../input/inputM/eventN`.
    public var syspath: String
    /// Every property: `ID_INPUT_KEY`, `ID_INPUT_KEYBOARD`, `EVCAPTURE_ROLE`, `DEVNAME`, ...
    /// Without udevd only the kernel's (`DEVNAME`, `MAJOR`, `MINOR`, ...).
    public var properties: [String: String]

    public init(node: String, syspath: String, properties: [String: String]) {
        self.node = node
        self.syspath = syspath
        self.properties = properties
    }

    public init(_ record: UdevRecord) {
        self.init(node: record.node, syspath: record.syspath, properties: record.properties)
    }

    /// The `EVCAPTURE_ROLE` property set by `udev-rules/`, if any.
    public var role: String? { properties["EVCAPTURE_ROLE"] }
}

/// Follows the input subsystem's evdev nodes.
public typealias UdevInputMonitor = UdevMonitor<UdevInputDevice>

/// One V4L2 node (`/dev/videoN`) as udev (or the kernel) describes it.
///
/// With udevd, its rules (`60-persistent-v4l.rules`) add what identifies a camera across
/// replugs: `ID_V4L_CAPABILITIES`, `ID_PATH`, `ID_SERIAL` and the `/dev/v4l/by-id/…` and
/// `/dev/v4l/by-path/…` links in `DEVLINKS`. Without udevd only the kernel's properties
/// and the sysfs attributes are there.
public struct UdevVideoDevice: UdevDeviceKind {
    public static var subsystem: String { "video4linux" }
    /// `video*` only: not `v4l-subdev*`, `vbi*`, `radio*`, `swradio*`, `v4l-touch*`.
    public static var sysnamePrefix: String { "video" }
    public static var attributes: [String] { ["name", "index"] }

    /// `/dev/videoN`.
    public var node: String
    /// `/sys/devices/.../video4linux/videoN`.
    public var syspath: String
    /// Every property (`ID_V4L_CAPABILITIES`, `ID_V4L_PRODUCT`, `ID_PATH`, `ID_SERIAL`, `DEVLINKS`, ...).
    public var properties: [String: String]
    /// sysfs `name`: the card name for most drivers. Nil for a removed device.
    public var name: String?
    /// sysfs `index`: 0 for a device's main node (uvcvideo's metadata node is 1). Nil when unknown.
    public var index: Int?

    public init(node: String, syspath: String, properties: [String: String], name: String? = nil, index: Int? = nil) {
        self.node = node
        self.syspath = syspath
        self.properties = properties
        self.name = name
        self.index = index
    }

    public init(_ record: UdevRecord) {
        self.init(
            node: record.node, syspath: record.syspath, properties: record.properties,
            name: record.attributes["name"], index: record.attributes["index"].flatMap { Int($0) })
    }

    /// The words of `ID_V4L_CAPABILITIES` (`:capture:` → `["capture"]`; also `video_output`,
    /// `video_overlay`, `audio`, `tuner`, `radio`), nil when udev did not set it (no udevd).
    public var capabilities: Set<String>? {
        properties["ID_V4L_CAPABILITIES"].map { Set($0.split(separator: ":").map(String.init)) }
    }
    /// `ID_PATH`: where the device hangs (`pci-0000:00:14.0-usb-0:1:1.0`).
    public var idPath: String? { properties["ID_PATH"] }
    /// `ID_SERIAL`: vendor, model and serial (`evcapture_project_evcapture_fake_camera_EVC0001`).
    public var serial: String? { properties["ID_SERIAL"] }
    /// The links udev made to the node (`DEVLINKS`), sorted.
    public var links: [String] {
        (properties["DEVLINKS"] ?? "").split(separator: " ").map(String.init).sorted()
    }
    /// The first `/dev/v4l/by-id/…` link in sort order: the camera's identity across replugs.
    public var byID: String? { links.first { $0.hasPrefix("/dev/v4l/by-id/") } }
}

/// A hotplug event for a V4L2 node.
public typealias UdevVideoEvent = UdevEvent<UdevVideoDevice>
/// Follows the video4linux subsystem's `/dev/videoN` nodes.
public typealias UdevVideoMonitor = UdevMonitor<UdevVideoDevice>
