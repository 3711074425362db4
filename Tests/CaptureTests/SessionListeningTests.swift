import Capture
import EvcaptureTesting
import Evdev
import Testing

/// Which devices the daemon listens to (the others are muted in the kernel, EVIOCSMASK).
@Suite struct SessionListeningTests {
    let primary = RoleAssignment(role: .primary, source: .default, reason: "test")
    let ignored = RoleAssignment(role: .ignore, source: .config, reason: "test")
    let always = SessionPolicy()
    let launch = SessionPolicy(mode: .launch, launchButton: .camera)

    @Test func aDeviceWithoutRolesIsNotListenedTo() {
        let mouse = profile("mouse", codes: [.relX, .btnLeft], roles: [:])
        #expect(!always.listens(to: mouse))
        #expect(!launch.listens(to: mouse), "no launch button on it either")
    }

    @Test func aDeviceWhoseEveryRoleIsIgnoreIsNotListenedTo() {
        // kind = "ignore": the codes are there, each with the ignore role.
        let keys = profile("keys", codes: [.volumeDown, .enter], roles: [.volumeDown: ignored, .enter: ignored])
        #expect(!always.listens(to: keys))
        // One role is enough, at either end of the map.
        var one = keys
        one.roles[.enter] = primary
        #expect(always.listens(to: one))
        one.roles[.enter] = ignored
        one.roles[.volumeDown] = primary
        #expect(always.listens(to: one))
    }

    @Test func aLaunchedSessionListensToItsLaunchButtonOnADeviceWithoutRoles() {
        let camera = profile("camera-key", codes: [.camera], roles: [.camera: ignored])
        #expect(launch.listens(to: camera))
        #expect(!always.listens(to: camera), "not a launch session: the key is nothing to it")
        let other = SessionPolicy(mode: .launch, launchButton: .volumeDown)
        #expect(!other.listens(to: camera), "another launch button")
    }
}
