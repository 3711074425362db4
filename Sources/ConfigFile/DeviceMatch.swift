import Vocabulary
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import TOMLKit
import Camera
import MQTT
import Rig

/// Which devices a `[devices.LABEL]` table applies to. Every field given must match; with
/// no `match` fields the label itself is the device name.
public struct DeviceMatch: Sendable, Hashable {
    public var name: String?
    /// `/dev/input/eventN`, or a `/dev/input/by-id/…` / `by-path` link resolving to it.
    public var node: String?
    public var bus: UInt16?
    public var vendor: UInt16?
    public var product: UInt16?
    public var uniq: String?
    /// Codes the device must declare (`has = ["KEY_VOLUMEDOWN"]`): tells apart devices that
    /// share a name, like two gpio-keys nodes of a Raspberry Pi.
    public var has: Set<EventCode> = []

    public init(
        name: String? = nil, node: String? = nil, bus: UInt16? = nil, vendor: UInt16? = nil, product: UInt16? = nil,
        uniq: String? = nil, has: Set<EventCode> = []
    ) {
        self.has = has
        self.name = name
        self.node = node
        self.bus = bus
        self.vendor = vendor
        self.product = product
        self.uniq = uniq
    }

    /// Whether a device matches. `node` is compared after resolving symlinks on both sides.
    public func matches(_ d: DeviceDescription, node devNode: String) -> Bool {
        if let name, name != d.name { return false }
        if let bus, bus != d.bus.rawValue { return false }
        if let vendor, vendor != d.vendor { return false }
        if let product, product != d.product { return false }
        if let uniq, uniq != (d.uniq ?? "") { return false }
        if !has.isSubset(of: d.codes) { return false }
        if let node {
            let a = URL(fileURLWithPath: node).resolvingSymlinksInPath().path
            let b = URL(fileURLWithPath: devNode).resolvingSymlinksInPath().path
            if a != b { return false }
        }
        return true
    }
}
