import Vocabulary

/// Decides the role of every code of a device (docs/behaviour.md#roles). Pure: the same inputs always give
/// the same profile.
///
/// Precedence, lowest first:
/// 1. capability defaults: the device's kind is guessed from its name, bus and codes
///    (``detectKind(_:)``) and gives every code a role;
/// 2. the known-device table (``KnownDevice``), written as `EVCAPTURE_ROLE` is;
/// 3. the udev property `EVCAPTURE_ROLE`: a device kind in it replaces the defaults with
///    that kind's roles, then its `CODE=role` items replace single codes;
/// 4. the config file (``RoleOverrides``): the same two steps again.
/// `grab`/`nograb` (udev) or `dedicated` (config) decide grabbing last.
public enum RoleClassifier {
    /// The profile of one device.
    /// - Parameters:
    ///   - udevRole: the raw `EVCAPTURE_ROLE` value, if udev set one.
    ///   - config: overrides from the config file for this device, if any.
    public static func profile(
        for description: DeviceDescription, node: String, udevRole: String? = nil, config: RoleOverrides? = nil
    ) -> DeviceProfile {
        var warnings: [String] = []
        let detected = detectKind(description)
        var kind = detected.kind, kindReason = detected.reason
        var roles = roles(of: description, as: kind, source: .default, reason: kindReason)
        var dedicated = detected.dedicated
        var dedicationSource = RoleSource.default

        var layers: [(RoleSource, RoleOverrides, String)] = []
        if let known = KnownDevice.entry(for: description) {
            let (parsed, problems) = RoleOverrides.parse(udevProperty: known.roles)
            warnings += problems
            layers.append((.knownDevice, parsed, "known device (\(known.product))"))
        }
        if let udevRole {
            let (parsed, problems) = RoleOverrides.parse(udevProperty: udevRole)
            warnings += problems
            layers.append((.udev, parsed, "EVCAPTURE_ROLE"))
        }
        if let config { layers.append((.config, config, "config")) }

        for (source, overrides, label) in layers {
            if let k = overrides.kind {
                kind = k
                kindReason = "\(label): \(k.rawValue)"
                roles = self.roles(of: description, as: k, source: source, reason: kindReason)
                // gpio/adc buttons stay dedicated when named `buttons` again.
                dedicated = k == .buttons && detected.kind == .buttons ? detected.dedicated : k.isDedicated
                dedicationSource = source
            }
            for (code, codeRole) in overrides.codes.sorted(by: { $0.key < $1.key }) {
                if !description.has(code) {
                    warnings.append("\(label): \(code.name) is not a code this device sends")
                }
                roles[code] = RoleAssignment(
                    role: codeRole.role, source: source, reason: "\(label): \(code.name)=\(codeRole.spelling)",
                    step: codeRole.step, reading: codeRole.reading)
            }
            if let d = overrides.dedicated {
                dedicated = d
                dedicationSource = source
            }
        }
        // Codes whose role is `ignore` are left out: a missing code means ignore, and an
        // explicit override to ignore must stay visible with its reason.
        roles = roles.filter { $0.value.role != .ignore || $0.value.source != .default }
        var profile = DeviceProfile(
            description: description, node: node, roles: roles, isHeadset: kind == .headset,
            isDedicated: dedicated && kind != .ignore, kind: kind, kindReason: kindReason, warnings: warnings)
        profile.dedicationSource = dedicationSource
        return profile
    }

    /// The kind the capabilities suggest, why, and whether the device is dedicated to the
    /// rig by default (for `buttons`, only gpio-keys and adc-keys devices are).
    static func detectKind(_ d: DeviceDescription) -> (kind: DeviceKind, reason: String, dedicated: Bool) {
        let keys = d.codes.filter { $0.type == .key }
        if d.bus == .bluetooth && d.name.hasSuffix(" (AVRCP)") {
            return (.headset, "BlueZ AVRCP device (name ends in \" (AVRCP)\", Bluetooth)", true)
        }
        if isFullKeyboard(d) {
            return (.keyboard, "full keyboard (has letter keys)", false)
        }
        let lowerName = d.name.lowercased()
        let relAxes: Set<EventCode> = [.relX, .relY]
        let hasRelXY = !relAxes.isDisjoint(with: d.codes)
        let hasAbs = d.has(.abs)
        if lowerName.hasPrefix("rotary@") || lowerName.hasPrefix("rotary-encoder") {
            return (.encoder, "kernel rotary-encoder (name \"\(d.name)\")", true)
        }
        if d.bus == .host && keys.isEmpty && (hasRelXY || hasAbs) && !d.has(.relWheel) {
            return (.encoder, "axes without buttons on the host bus (rotary encoder)", true)
        }
        let wheels: Set<EventCode> = [.relDial, .relWheel, .relWheelHiRes]
        if !wheels.isDisjoint(with: d.codes) {
            if d.has(.btnLeft) || hasRelXY {
                return (.pointer, "pointer with a wheel", false)
            }
            return (.dial, d.has(.relDial) ? "dial (REL_DIAL)" : "wheel without pointer motion (dial)", true)
        }
        if d.bus == .host && keys == [.enter] {
            return (.encoder, "host-bus button with only KEY_ENTER (an encoder's push switch)", true)
        }
        let shutterKeys: Set<EventCode> = [.volumeUp, .volumeDown, .enter, .pageUp, .pageDown, .camera]
        if d.bus == .bluetooth && !shutterKeys.isDisjoint(with: keys) {
            return (.shutter, "Bluetooth remote with shutter keys", true)
        }
        let captureKeys: Set<EventCode> = [.volumeUp, .volumeDown, .camera, .cameraFocus]
        if !captureKeys.isDisjoint(with: keys) {
            let dedicatedName = lowerName.contains("gpio") || lowerName.contains("adc-keys") || lowerName.contains("adc_keys")
            return (.buttons, dedicatedName ? "gpio/adc buttons with volume or camera keys" : "volume or camera keys", dedicatedName)
        }
        return (.other, "no key or axis with a default role", false)
    }

    /// A full keyboard: most of the letter keys `KEY_A`…`KEY_Z`.
    static func isFullKeyboard(_ d: DeviceDescription) -> Bool {
        letterKeys.filter { d.has($0) }.count >= 20
    }

    static let letterKeys: [EventCode] = [
        16, 17, 18, 19, 20, 21, 22, 23, 24, 25,  // Q W E R T Y U I O P
        30, 31, 32, 33, 34, 35, 36, 37, 38,  // A S D F G H J K L
        44, 45, 46, 47, 48, 49, 50,  // Z X C V B N M
    ].map { EventCode.key($0) }

    /// The roles a kind gives the codes of `d`.
    static func roles(of d: DeviceDescription, as kind: DeviceKind, source: RoleSource, reason kindReason: String)
        -> [EventCode: RoleAssignment]
    {
        var roles: [EventCode: RoleAssignment] = [:]
        func set(_ code: EventCode, _ role: Role, _ why: String, step: Int = 0) {
            guard d.has(code) else { return }
            roles[code] = RoleAssignment(role: role, source: source, reason: "\(why); \(kindReason)", step: step)
        }
        func captureKeys() {
            set(.volumeDown, .primary, "volume down key")
            set(.volumeUp, .secondary, "volume up key")
            set(.camera, .primary, "camera key")
            set(.cameraFocus, .lightPress, "camera focus (half press) key")
        }
        func wheels() {
            set(.relDial, .slider, "dial axis")
            set(.relWheel, .slider, "wheel detents (count REL_WHEEL or REL_WHEEL_HI_RES, not both)")
            set(.relWheelHiRes, .slider, "hi-res wheel, 120 per detent (count REL_WHEEL or REL_WHEEL_HI_RES, not both)")
        }
        switch kind {
        case .buttons, .keyboard:
            captureKeys()
        case .headset:
            captureKeys()
            for code in [EventCode.playCD, .pauseCD, .playPause] { set(code, .primary, "headset play/pause key") }
        case .shutter:
            for code in [
                EventCode.volumeUp, .volumeDown, .enter, .kpEnter, .space, .pageUp, .pageDown, .camera, .playPause, .btn0, .btnLeft,
            ] {
                set(code, .primary, "remote shutter key")
            }
            set(.cameraFocus, .lightPress, "camera focus (half press) key")
        case .knob:
            set(.volumeUp, .slider, "knob turned up: +1", step: 1)
            set(.volumeDown, .slider, "knob turned down: −1", step: -1)
            set(.mute, .lightPress, "knob pushed (mute key)")
            wheels()
            set(.btn0, .lightPress, "knob button")
        case .dial:
            wheels()
            set(.btn0, .lightPress, "dial button")
        case .pointer:
            wheels()
        case .encoder:
            for code in d.codes where code.type == .rel || code.type == .abs {
                set(code, .slider, "encoder axis")
            }
            for code in d.codes where code.type == .key {
                set(code, .lightPress, "encoder push switch")
            }
        case .ignore:
            for code in d.codes where code.type == .key || code.type == .rel || code.type == .abs {
                set(code, .ignore, "ignored")
            }
        case .other:
            break
        }
        return roles
    }
}
