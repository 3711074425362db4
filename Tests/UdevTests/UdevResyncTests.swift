import Testing

@testable import Udev

/// docs/behaviour.md#reliability: after a burst of hotplug events overflows the monitor's socket (ENOBUFS),
/// the monitor enumerates again and reports what the lost messages would have.
@Suite struct UdevResyncTests {
    static func device(_ n: Int, role: String? = nil) -> UdevInputDevice {
        var properties = ["DEVNAME": "/dev/input/event\(n)", "ID_INPUT_KEY": "1"]
        properties["EVCAPTURE_ROLE"] = role
        return UdevInputDevice(
            node: "/dev/input/event\(n)", syspath: "/sys/devices/virtual/input/input\(n)/event\(n)", properties: properties)
    }

    static func known(_ devices: [UdevInputDevice]) -> [String: UdevInputDevice] {
        Dictionary(uniqueKeysWithValues: devices.map { ($0.syspath, $0) })
    }

    @Test func lostAddsRemovesAndChangesAreReported() {
        let (a, b, c, d) = (Self.device(3), Self.device(4), Self.device(5), Self.device(6))
        let cRetagged = Self.device(5, role: "remote")
        // before: a, b, c; lost in the overflow: b unplugged, c re-tagged by a rule, d plugged in
        let r = UdevInputMonitor.resync(known: Self.known([a, b, c]), present: [a, cRetagged, d])
        #expect(r.events == [.removed(b), .changed(cRetagged), .added(d)])
        #expect(r.known == Self.known([a, cRetagged, d]))
    }

    @Test func nothingLostIsNothingReported() {
        let devices = (0..<40).map { Self.device($0) }
        let r = UdevInputMonitor.resync(known: Self.known(devices), present: devices)
        #expect(r.events.isEmpty)
        #expect(r.known == Self.known(devices))
    }

    /// A burst that replaced every device (a dock unplugged and another plugged in).
    @Test func aWholeBurstLost() {
        let old = (0..<20).map { Self.device($0) }, new = (20..<45).map { Self.device($0) }
        let r = UdevInputMonitor.resync(known: Self.known(old), present: new)
        #expect(r.events.filter { if case .removed = $0 { true } else { false } }.count == 20)
        #expect(r.events.filter { if case .added = $0 { true } else { false } } == new.map { .added($0) })
        #expect(r.known == Self.known(new))
    }
}
