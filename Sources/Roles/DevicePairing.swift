import Vocabulary

/// Pairing the event nodes of one physical device (docs/behaviour.md#device-pairing): a USB
/// knob whose push switch comes as a second interface, or a keyboard-like node that carries an
/// encoder's press, is the encoder's light press even when no rule names it.
extension RoleClassifier {
    /// Keys a push switch sends. Only these become the encoder's light press: a second node
    /// often over-advertises (a whole consumer-control page), and its other keys keep
    /// whatever role they have.
    static let pushKeys: [EventCode] = [.enter, .kpEnter, .select, .mute, .playPause, .btn0, .btnLeft]

    /// The physical device an event node belongs to: its `phys` path without the last
    /// `/inputN` (the HID interface: `usb-0000:00:14.0-2/input1` → `usb-0000:00:14.0-2`, the
    /// same for every interface of one USB device), with its `uniq` (Bluetooth nodes carry
    /// the adapter's address as `phys`; `uniq` tells the devices on it apart).
    ///
    /// nil when the node has no `phys` (the `rotary-encoder` driver, uinput devices that set
    /// none): such nodes are never paired by parent; pair them by config.
    public static func parent(of d: DeviceDescription) -> String? {
        guard var phys = d.phys, !phys.isEmpty else { return nil }
        if let slash = phys.lastIndex(of: "/"), phys[phys.index(after: slash)...].hasPrefix("input") {
            phys = String(phys[..<slash])
        }
        guard !phys.isEmpty else { return nil }
        if let uniq = d.uniq, !uniq.isEmpty { return "\(phys) (\(uniq))" }
        return phys
    }

    /// Pairs encoders with their push switches among the profiles of every node present,
    /// each computed alone by ``profile(for:node:udevRole:config:)``. Returns the profiles in
    /// the same order; unpaired ones are returned unchanged.
    ///
    /// Two nodes with the same ``parent(of:)`` pair when one is an *encoder* (a node with a
    /// slider role that is not a pointer: a mouse's wheel has no push switch on the combo
    /// receiver's other nodes) and the other a *switch*: not a keyboard, pointer or ignored
    /// device, without slider roles or pointer motion, with ``pushKeys`` that have no role
    /// from udev or the config. Those keys become `light-press` (source `default`: any rule
    /// still overrides them). A switch with no role of its own becomes an `encoder` device,
    /// grabbed when its encoder is, unless udev or the config said otherwise.
    public static func pair(_ profiles: [DeviceProfile]) -> [DeviceProfile] {
        var result = profiles
        let parents = profiles.map { parent(of: $0.description) }
        func isEncoder(_ p: DeviceProfile) -> Bool {
            p.kind != .pointer && p.kind != .ignore && p.roles.values.contains { $0.role == .slider }
        }
        func freePushKeys(_ p: DeviceProfile) -> [EventCode] {
            guard ![DeviceKind.keyboard, .pointer, .ignore].contains(p.kind), !isEncoder(p),
                !p.description.has(.relX), !p.description.has(.relY)
            else { return [] }
            // A code missing from `roles` is ignored by default; an explicit `ignore` stays.
            return pushKeys.filter { p.description.has($0) && p.roles[$0] == nil }
        }
        for s in profiles.indices {
            guard let parent = parents[s] else { continue }
            let keys = freePushKeys(profiles[s])
            guard !keys.isEmpty else { continue }
            for e in profiles.indices where e != s && parents[e] == parent && isEncoder(profiles[e]) {
                let encoder = profiles[e], push = profiles[s]
                let why = "push switch of \"\(encoder.description.name)\" (\(encoder.node)), same parent \(parent)"
                for key in keys where result[s].roles[key] == nil {
                    result[s].roles[key] = RoleAssignment(role: .lightPress, source: .default, reason: why)
                }
                result[s].partners.append(
                    DevicePartner(node: encoder.node, name: encoder.description.name, relation: .encoder, parent: parent))
                result[e].partners.append(
                    DevicePartner(node: push.node, name: push.description.name, relation: .pushSwitch, parent: parent))
                if push.kind == .other {
                    result[s].kind = .encoder
                    result[s].kindReason = why
                    if push.dedicationSource == .default { result[s].isDedicated = result[s].isDedicated || encoder.isDedicated }
                }
            }
        }
        return result
    }
}
