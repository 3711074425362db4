import Vocabulary

extension CaptureDevice {
    /// The device as its profile describes it.
    public convenience init(profile: DeviceProfile) {
        let d = profile.description
        self.init(
            name: d.name, node: profile.node, bus: d.bus, vendor: d.vendor, product: d.product, uniq: d.uniq,
            isHeadset: profile.isHeadset)
    }
}
