#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing

/// The broker's host name is resolved off the daemon's loop. In the VM the guest's
/// resolver is pointed (a bind mount over /etc/resolv.conf, undone afterwards) at a DNS
/// server of the test's that answers only after 5 s; a press made while the daemon waits
/// for that answer is a capture line before the answer is even sent. A loop blocked in
/// getaddrinfo could not read the key until then. Once the answer comes, the station
/// connects over TLS with a certificate that names only the host name: the name, not the
/// address, was what libmosquitto checked.
@Suite(
    .systemTest, .needsDaemonExecutable, .serialized,
    .enabled(if: MosquittoBroker.skipReason == nil, "needs mosquitto and mosquitto-clients on the host"),
    .enabled(if: TestCertificates.skipReason == nil, "needs openssl on the host"))
struct RigResolverSystemTests {
    static let host = "slow-broker.evcapture.test"

    @Test func aSlowNameLookupDoesNotHoldUpPresses() throws {
        let dir = try ScratchDirectory(prefix: "slow-dns")
        let resolvConf = dir.url.path + "/resolv.conf"
        // One try, and a timeout longer than the server's delay: the answer is awaited.
        try "nameserver 127.0.0.1\noptions timeout:15 attempts:1\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        let mounted = try run("mount", "--bind", resolvConf, "/etc/resolv.conf")
        try #require(mounted.succeeded, "cannot put a resolv.conf in place: \(mounted)")
        defer { _ = try? run("umount", "/etc/resolv.conf") }
        let dns = try SlowDNS(name: Self.host, delay: .seconds(5))
        defer { dns.stop() }

        let ca = try TestCertificates(directory: dir.url.path, name: "rig")
        let broker = try MosquittoBroker(directory: dir.url.path, tls: try ca.server("server", names: [Self.host]))
        try broker.start()
        let scratch = try DaemonScratch("slow-dns")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"
            capture-device = "\(try #require(vividNode(instance: 0)))"
            width = 320
            height = 240

            [output]
            directory = "\(scratch.output)"

            [mqtt]
            url = "\(broker.tlsURL(host: Self.host))"
            ca-file = "\(ca.caFile)"
            station = "s"

            """)
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let daemon = try DaemonProcess("slow-dns", arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }

        // The daemon is waiting for the name: the query came, no answer has gone.
        try #require(pollUntil(timeout: .seconds(20)) { !dns.queries.isEmpty }, "no DNS query\n\(daemon.transcript)")
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")
        let clicked = SlowDNS.now()
        try #require(
            dns.answers.isEmpty,
            "the key device was reported only after the DNS answer (the loop waited for the lookup?): queries \(dns.queries), answers \(dns.answers), now \(clicked)"
        )
        try keys.click(.volumeDown)
        var seen: Double?
        _ = pollUntil(timeout: .seconds(20)) {
            guard daemon.objects.contains(where: { $0.event == "capture" && $0.string("phase") == "began" }) else { return false }
            seen = SlowDNS.now()
            return true
        }
        let began = try #require(seen, "no capture line\n\(daemon.transcript)")
        let answered = dns.answers.first
        #expect(
            answered == nil || began < answered!,
            "the press was seen at \(began), after the DNS answer at \(answered!) (query at \(dns.queries))")
        print("slow DNS: the press showed \(began - clicked) s after the click, before the answer")

        // Then the station connects, its TLS certificate checked against the name.
        #expect(
            pollUntil(timeout: .seconds(30)) { (try? broker.retained("evcapture/s/status")) == "online" },
            "\(daemon.transcript)\n\(broker.log)")
        #expect(daemon.objects.filter { $0.event == "error" }.isEmpty, "\(daemon.transcript)")
        #expect(daemon.waitFor { $0.event == "action" && $0.string("action") == "photo" } != nil, "\(daemon.transcript)")

        // A daemon told to stop while its lookup is pending stops at once and cleanly: the
        // lookup's thread is left to finish (and free the client) on its own.
        let second = try DaemonScratch("slow-dns-stop")
        let secondConfig = try second.write(
            "evcapture.toml",
            "[camera]\ndevice = \"none\"\n[mqtt]\nurl = \"\(broker.tlsURL(host: Self.host))\"\nca-file = \"\(ca.caFile)\"\nstation = \"s2\"\n"
        )
        let stopping = try DaemonProcess(
            "slow-dns-stop", arguments: ["run", "--config", secondConfig, "--json"], environment: second.environment)
        defer { stopping.terminate() }
        let asked = dns.queries.count
        try #require(pollUntil(timeout: .seconds(20)) { dns.queries.count > asked }, "no DNS query\n\(stopping.transcript)")
        try #require(stopping.waitFor(DaemonLines.session("started")) != nil, "\(stopping.transcript)")
        let told = SlowDNS.now()
        kill(stopping.pid, SIGTERM)
        #expect(pollUntil(timeout: .seconds(20)) { !stopping.isRunning })
        let gone = SlowDNS.now()
        #expect(stopping.waitForExit() == 0, "\(stopping.transcript)")
        // Stopped before the answer (5 s after the query) came: the stop did not wait for it.
        #expect(dns.answers.count == asked, "the daemon stopped only after its lookup was answered: \(dns.answers), told at \(told)")
        print("slow DNS: stopping took \(gone - told) s")
    }
}
