import ConfigFile
import Testing

@testable import EvcaptureDaemon

/// `check-config` and the installed service's sandbox: the live view needs IP sockets.
@Suite struct LiveViewCheckTests {
    static let unit = "[Service]\nUser=evcapture\nRestrictAddressFamilies=AF_UNIX AF_NETLINK\n"

    @Test func theServiceWithoutIPSocketsIsAWarning() throws {
        let sandbox = ServiceSandbox.parse(unit: "/lib/systemd/system/evcapture.service", text: Self.unit, dropIns: [])
        #expect(!sandbox.allows("AF_INET") && sandbox.allows("AF_UNIX"))
        let config = try Config.parse("[http]\n", file: "c.toml")
        let (text, warnings) = ConfigCheck.report(config: config, file: "c.toml", inventory: nil, sandbox: sandbox)
        #expect(warnings == 1, "\(text)")
        #expect(
            text == "c.toml: warning: [http]: /lib/systemd/system/evcapture.service allows no AF_INET socket (RestrictAddressFamilies): "
                + "the service cannot listen on 127.0.0.1:8080; docs/live-view.md shows the drop-in\n")
        // Without [http] the same sandbox is fine.
        #expect(
            ConfigCheck.report(config: try Config.parse("", file: "c.toml"), file: "c.toml", inventory: nil, sandbox: sandbox).warnings == 0
        )
    }

    @Test func theDropInAllowsIt() throws {
        let dropIn = "[Service]\nRestrictAddressFamilies=AF_UNIX AF_NETLINK AF_INET AF_INET6\n"
        let sandbox = ServiceSandbox.parse(unit: "u", text: Self.unit, dropIns: [dropIn])
        #expect(sandbox.allows("AF_INET") && sandbox.allows("AF_INET6"))
        let config = try Config.parse("[http]\nlisten = \"[::1]:8080\"\n", file: "c.toml")
        #expect(ConfigCheck.report(config: config, file: "c.toml", inventory: nil, sandbox: sandbox).warnings == 0)
        // Cleared, then a deny list.
        let denied = ServiceSandbox.parse(
            unit: "u", text: Self.unit, dropIns: ["[Service]\nRestrictAddressFamilies=\nRestrictAddressFamilies=~AF_INET6\n"])
        #expect(denied.allows("AF_INET") && !denied.allows("AF_INET6"))
    }
}
