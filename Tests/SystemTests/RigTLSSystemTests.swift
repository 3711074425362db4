#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing

/// A station on `mqtts://`, in the VM: mosquitto with a TLS listener whose certificates
/// `openssl` makes for the test. A certificate the station's `ca-file` does not vouch for is
/// one clear error line naming the broker's URL, and the station's own button still takes
/// photos; with the right CA it connects and takes triggers. Neither way does the password
/// from `password-file` show on the daemon's output, command line or environment.
@Suite(
    .systemTest, .needsDaemonExecutable, .serialized,
    .enabled(if: MosquittoBroker.skipReason == nil, "needs mosquitto and mosquitto-clients on the host"),
    .enabled(if: TestCertificates.skipReason == nil, "needs openssl on the host"))
struct RigTLSSystemTests {
    struct Rig {
        let broker: MosquittoBroker
        let password: String
        let config: String
        let scratch: DaemonScratch
    }

    /// A broker whose TLS certificate (for localhost) is signed by `serverCA`, and a
    /// station that trusts `clientCA` and logs in with a password from a file.
    static func rig(_ dir: String, serverCA: TestCertificates, clientCA: String, label: String) throws -> Rig {
        let password = "pw-\(UUID().uuidString)"
        let broker = try MosquittoBroker(
            directory: dir, users: ["rig": password], tls: try serverCA.server("server", names: ["localhost", "127.0.0.1"]))
        try broker.start()
        let scratch = try DaemonScratch(label)
        let passwordFile = try scratch.write("mqtt-password", password + "\n")
        chmod(passwordFile, 0o600)
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
            photo-name = "{trigger}-s.jpg"

            [mqtt]
            url = "\(broker.tlsURL())"
            ca-file = "\(clientCA)"
            username = "rig"
            password-file = "\(passwordFile)"
            station = "s"

            """)
        return Rig(broker: broker, password: password, config: config, scratch: scratch)
    }

    /// The password nowhere the daemon shows things: its output, its command line, its environment.
    static func expectNoPassword(_ daemon: DaemonProcess, _ password: String) {
        #expect(!daemon.stdout.contains(password), "the password is on stdout")
        #expect(!daemon.stderr.contains(password), "the password is on stderr")
        for file in ["cmdline", "environ"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(daemon.pid)/\(file)"))) ?? Data()
            #expect(!bytes.isEmpty, "/proc/\(daemon.pid)/\(file) unread")
            #expect(!String(decoding: bytes, as: UTF8.self).contains(password), "the password is in /proc/\(daemon.pid)/\(file)")
        }
    }

    @Test func aCertificateFromAnotherCAIsAClearErrorAndLocalCaptureGoesOn() throws {
        let dir = try ScratchDirectory(prefix: "tls-broker")
        let ours = try TestCertificates(directory: dir.url.path, name: "ours")
        let theirs = try TestCertificates(directory: dir.url.path, name: "theirs")
        let rig = try Self.rig(dir.url.path, serverCA: theirs, clientCA: ours.caFile, label: "tls-wrong-ca")
        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let daemon = try DaemonProcess(
            "tls-wrong-ca", arguments: ["run", "--config", rig.config, "--json"], environment: rig.scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(daemon.transcript)")

        let error = try #require(daemon.waitFor { $0.event == "error" && $0.string("code") == "mqtt-connect" }, "\(daemon.transcript)")
        let message = error.object.string("message") ?? ""
        #expect(
            message.hasPrefix(
                "mqtt: cannot connect to \(rig.broker.tlsURL()): TLS handshake failed: certificate verify failed (the broker's certificate is checked against the CA file \(ours.caFile) and the host name localhost); retrying"
            ),
            "\(message)")

        // Local capture is not held up by the broker it cannot trust.
        try keys.click(.volumeDown)
        let photo = try #require(daemon.waitFor { $0.event == "action" && $0.string("action") == "photo" }, "\(daemon.transcript)")
        let file = try #require(photo.object.string("file"))
        #expect(looksLikeJPEG([UInt8]((try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data())), "\(file)")
        // Retried quietly: one error line for the outage, however many attempts (0.5 s doubling).
        Thread.sleep(forTimeInterval: 2)
        #expect(daemon.objects.filter { $0.string("code") == "mqtt-connect" }.count == 1, "\(daemon.transcript)")
        #expect(try rig.broker.retained("evcapture/s/status") == nil, "the station got through:\n\(rig.broker.log)")
        Self.expectNoPassword(daemon, rig.password)
    }

    @Test func theRightCAConnectsAndTakesATriggerOverTLS() throws {
        let dir = try ScratchDirectory(prefix: "tls-broker")
        let ca = try TestCertificates(directory: dir.url.path, name: "rig")
        let rig = try Self.rig(dir.url.path, serverCA: ca, clientCA: ca.caFile, label: "tls-right-ca")
        let daemon = try DaemonProcess(
            "tls-right-ca", arguments: ["run", "--config", rig.config, "--json"], environment: rig.scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.session("started")) != nil, "\(daemon.transcript)")
        #expect(
            pollUntil(timeout: .seconds(20)) { (try? rig.broker.retained("evcapture/s/status")) == "online" },
            "\(daemon.transcript)\n\(rig.broker.log)")
        try rig.broker.publish("evcapture/s/trigger", "{\"command\":\"photo\",\"trigger\":\"over-tls\"}")
        let photo = daemon.waitFor { $0.event == "action" && $0.string("action") == "photo" && $0.string("trigger") == "over-tls" }
        #expect(photo?.object.string("file") == "\(rig.scratch.output)/over-tls-s.jpg", "\(daemon.transcript)")
        #expect(daemon.objects.filter { $0.event == "error" }.isEmpty, "\(daemon.transcript)")
        Self.expectNoPassword(daemon, rig.password)
    }
}
