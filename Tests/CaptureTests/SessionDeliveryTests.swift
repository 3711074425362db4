import Capture
import EvcaptureTesting
import Vocabulary
import Testing

/// Which of a device's events the daemon asks the kernel for (EVIOCSMASK; devices shared
/// with the desktop keep their meaning; the daemon needs only its buttons:
/// docs/behaviour.md#grabs-and-event-delivery).
@Suite struct SessionDeliveryTests {
    let primary = RoleAssignment(role: .primary, source: .default, reason: "test")
    let ignored = RoleAssignment(role: .ignore, source: .config, reason: "test")
    let always = SessionPolicy()
    let launch = SessionPolicy(mode: .launch, launchButton: .camera)

    @Test func nothingFromADeviceWithoutRoles() {
        let mouse = profile("mouse", codes: [.relX, .btnLeft], roles: [:])
        #expect(always.delivery(for: mouse) == EventDelivery.none)
        #expect(launch.delivery(for: mouse) == EventDelivery.none, "no launch button on it either")
    }

    @Test func nothingFromADeviceWhoseEveryRoleIsIgnore() {
        // kind = "ignore": the codes are there, each with the ignore role.
        let keys = profile("keys", codes: [.volumeDown, .enter], roles: [.volumeDown: ignored, .enter: ignored])
        #expect(always.delivery(for: keys) == EventDelivery.none)
    }

    @Test func onlyTheKeysWithARoleFromADeviceSharedWithTheDesktop() {
        let keyboard = profile("keyboard", codes: [.volumeDown, .volumeUp, .enter], roles: [.volumeDown: primary, .enter: ignored])
        #expect(always.delivery(for: keyboard) == .keys([.volumeDown]))
        // The launch button of a launched session too, with or without a role of its own.
        var withCamera = keyboard
        withCamera.description.codes.insert(.camera)
        #expect(launch.delivery(for: withCamera) == .keys([.volumeDown, .camera]))
        #expect(always.delivery(for: withCamera) == .keys([.volumeDown]), "not a launch session: the key is nothing to it")
        // A role on an axis: the axes are not filtered, no key is needed.
        let wheel = profile("wheel", codes: [.relDial, .enter], roles: [.relDial: primary])
        #expect(always.delivery(for: wheel) == .keys([]))
    }

    @Test func everythingFromADedicatedDeviceWithARole() {
        var remote = profile("remote", codes: [.volumeDown, .enter], roles: [.volumeDown: primary, .enter: ignored])
        remote.isDedicated = true
        #expect(always.delivery(for: remote) == .all, "its grab waits until none of its keys is down")
        remote.roles[.volumeDown] = ignored
        #expect(always.delivery(for: remote) == EventDelivery.none, "dedicated, but nothing of it has a role")
    }

    @Test func theLaunchButtonAloneIsHeard() {
        let camera = profile("camera-key", codes: [.camera], roles: [.camera: ignored])
        #expect(launch.delivery(for: camera) == .keys([.camera]))
        #expect(always.delivery(for: camera) == EventDelivery.none)
        #expect(
            SessionPolicy(mode: .launch, launchButton: .volumeDown).delivery(for: camera) == EventDelivery.none, "another launch button")
    }
}
