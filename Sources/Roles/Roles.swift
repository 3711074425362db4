import Vocabulary

// The roles' plain data (`DeviceProfile`, `Role`, `RoleAssignment`, `DeviceKind`, ...) is the
// floor's (docs/architecture.md#modules); how they are decided is this module's.

extension RoleAssignment {
    /// The values are an 8-bit position counter (``AxisReading/counter``).
    var isCounter: Bool { reading == .counter }
}

extension DeviceKind {
    /// Whether devices of this kind are grabbed while the session runs
    /// (docs/behaviour.md#grabs-and-event-delivery).
    public var isDedicated: Bool {
        switch self {
        case .shutter, .headset, .knob, .dial, .encoder: true
        case .buttons, .keyboard, .pointer, .ignore, .other: false
        }
    }
}
