#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing

/// Many stations on one broker, in the VM: mosquitto (the host's Debian package) runs inside
/// the guest on its loopback address — the guest has no network to the host, and this way
/// each station has a real camera (its own vivid instance) and real key presses (uinput).
@Suite(
    .systemTest, .needsDaemonExecutable, .serialized,
    .enabled(if: MosquittoBroker.skipReason == nil, "needs mosquitto and mosquitto-clients on the host"))
struct RigSystemTests {
    /// A station's config: its own vivid, `{trigger}` in file names, the rig's broker.
    static func stationConfig(
        _ scratch: DaemonScratch, station: String, camera: String, broker: MosquittoBroker, fanOut: String,
        ignoreKeys: Bool = false
    ) throws -> String {
        try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"
            capture-device = "\(camera)"
            width = 320
            height = 240

            [output]
            directory = "\(scratch.output)"
            photo-name = "{trigger}-\(station).jpg"

            [mqtt]
            url = "\(broker.url)"
            station = "\(station)"
            fan-out = "\(fanOut)"
            """ + (ignoreKeys ? "\n\n[devices.keys]\nname = \"gpio-keys\"\nkind = \"ignore\"\n" : "\n"))
    }

    /// One press on station A (fan-out all) gives a photo on A, B and C — three daemons,
    /// each on its own vivid — with one trigger id, each frame within one frame interval of
    /// the press; A's events are on the broker; a malformed trigger changes nothing on B; B
    /// survives a broker restart and takes the next trigger; A killed → its last will says offline.
    @Test(.enabled(if: vividNode(instance: 2) != nil, "needs three vivid instances"))
    func onePressOnOneStationIsAPhotoOnEveryStationWithOneTriggerID() throws {
        let brokerScratch = try ScratchDirectory(prefix: "broker")
        let broker = try MosquittoBroker(directory: brokerScratch.url.path)
        try broker.start()
        let watch = try broker.subscribe("evcapture/#")

        let keys = try fixtureDevice("gpio-keys-volume-keys")
        let a = try DaemonScratch("station-a")
        let b = try DaemonScratch("station-b")
        let c = try DaemonScratch("station-c")
        let configA = try Self.stationConfig(a, station: "a", camera: try #require(vividNode(instance: 0)), broker: broker, fanOut: "all")
        let configB = try Self.stationConfig(
            b, station: "b", camera: try #require(vividNode(instance: 1)), broker: broker, fanOut: "none", ignoreKeys: true)
        let configC = try Self.stationConfig(
            c, station: "c", camera: try #require(vividNode(instance: 2)), broker: broker, fanOut: "none", ignoreKeys: true)
        let stationA = try DaemonProcess("station-a", arguments: ["run", "--config", configA, "--json"], environment: a.environment)
        defer { stationA.terminate() }
        let stationB = try DaemonProcess("station-b", arguments: ["run", "--config", configB, "--json"], environment: b.environment)
        defer { stationB.terminate() }
        let stationC = try DaemonProcess("station-c", arguments: ["run", "--config", configC, "--json"], environment: c.environment)
        defer { stationC.terminate() }
        try #require(stationA.waitFor(DaemonLines.deviceAdded(keys.node)) != nil, "\(stationA.transcript)")
        for station in ["a", "b", "c"] {
            try #require(
                watch.waitFor { t, p in t == "evcapture/\(station)/status" && p == "online" } != nil,
                "station \(station) not online\n\(watch.messages)\n\(stationA.transcript)\n\(stationB.transcript)\n\(stationC.transcript)")
        }
        // The remote stations' rings run (a trigger's frame comes from the ring).
        for s in [stationB, stationC] { try #require(s.waitFor(DaemonLines.session("started")) != nil, "\(s.transcript)") }

        // One press on A.
        try keys.click(.volumeDown)
        let began = try #require(
            stationA.waitFor { $0.event == "capture" && $0.string("phase") == "began" }, "\(stationA.transcript)")
        let pressTime = try #require(began.object.double("time"))
        let photoA = try #require(
            stationA.waitFor { $0.event == "action" && $0.string("action") == "photo" }, "no photo on A\n\(stationA.transcript)")
        let trigger = try #require(photoA.object.string("trigger"), "\(photoA.object)")
        let press = try #require(photoA.object.int("press"))
        #expect(trigger.hasPrefix("a-") && trigger.hasSuffix("-\(press)"), "\(trigger)")
        #expect(photoA.object.string("file") == "\(a.output)/\(trigger)-a.jpg")

        // The same instant on every station (one kernel, one CLOCK_MONOTONIC in the VM): each
        // frame is within one frame interval of A's press — vivid here delivers 5 fps, 200 ms
        // apart — and the remote stations report their frame's offset from the press.
        let frameA = try #require(photoA.object.double("frame_time"))
        #expect(abs(frameA - pressTime) <= 0.2, "A's frame \(frameA), the press \(pressTime)")
        for (name, station, scratch) in [("b", stationB, b), ("c", stationC, c)] {
            // Heard first (an action line of its own, before the frame is saved), then the photo.
            let heard = try #require(
                station.waitFor { $0.event == "action" && $0.string("action") == "trigger" }, "no trigger on \(name)\n\(station.transcript)"
            )
            #expect(heard.object.string("trigger") == trigger && heard.object.string("command") == "photo", "\(heard.object)")
            #expect(heard.object.string("topic") == "evcapture/all/trigger", "\(heard.object)")
            let photo = try #require(
                station.waitFor { $0.event == "action" && $0.string("action") == "photo" }, "no photo on \(name)\n\(station.transcript)")
            #expect(heard.index < photo.index)
            #expect(photo.object.string("trigger") == trigger, "\(name): \(photo.object)")
            #expect(photo.object["press"] == nil, "a remote trigger has no local press: \(photo.object)")
            let offset = try #require(photo.object.double("offset"), "no offset on \(name)'s photo: \(photo.object)")
            #expect(abs(offset) <= 0.2, "\(name)'s frame is \(offset) s from the press")
            let frame = try #require(photo.object.double("frame_time"))
            #expect(abs(frame - pressTime) <= 0.2, "\(name)'s frame \(frame), the press \(pressTime)")
            let file = "\(scratch.output)/\(trigger)-\(name).jpg"
            #expect(photo.object.string("file") == file)
            let jpeg = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data())
            #expect(looksLikeJPEG(jpeg), "\(file): \(jpeg.count) bytes")
            // No photo of its own: the key is ignored there.
            #expect(station.objects.filter { $0.event == "capture" }.isEmpty)
        }
        let jpegA = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: "\(a.output)/\(trigger)-a.jpg"))) ?? Data())
        #expect(looksLikeJPEG(jpegA), "A's photo: \(jpegA.count) bytes")

        // On the broker: A's capture events and action line, and the trigger with the press time.
        let fanned = try #require(watch.waitFor { t, _ in t == "evcapture/all/trigger" }, "\(watch.messages)")
        let message = try #require(try JSONSerialization.jsonObject(with: Data(fanned.payload.utf8)) as? [String: Any])
        #expect(message["command"] as? String == "photo" && message["trigger"] as? String == trigger && message["from"] as? String == "a")
        let pressWallTime = try #require(message["time"] as? Double)
        #expect(abs(pressWallTime - Date().timeIntervalSince1970) < 60, "\(pressWallTime)")
        #expect(watch.waitFor { t, p in t == "evcapture/a/event/capture" && p.contains("\"phase\":\"began\"") } != nil)
        for station in ["a", "b", "c"] {
            #expect(watch.waitFor { t, p in t == "evcapture/\(station)/event/action" && p.contains("\"trigger\":\"\(trigger)\"") } != nil)
        }

        // Malformed triggers: an error line each, nothing else happens on B.
        let before = stationB.objects.count
        try broker.publish("evcapture/b/trigger", "{\"command\":\"explode\"}")
        try broker.publish("evcapture/all/trigger", "not json")
        let errors = stationB.waitForCount(2, from: before) { $0.event == "error" && $0.string("code") == "bad-trigger" }
        #expect(errors.count == 2, "\(stationB.transcript)")
        #expect(errors.first?.string("message")?.contains("on evcapture/b/trigger \"command\" must be one of") == true, "\(errors)")
        #expect(stationB.objects[before...].filter { $0.event == "action" }.isEmpty)

        // The broker restarts: B reconnects and the next trigger works.
        broker.stop()
        #expect(stationB.waitFor(from: before) { $0.string("code") == "mqtt-disconnected" } != nil, "\(stationB.transcript)")
        try broker.start()
        let watch2 = try broker.subscribe("evcapture/#")
        #expect(watch2.waitFor(timeout: .seconds(30)) { t, p in t == "evcapture/b/status" && p == "online" } != nil, "\(watch2.messages)")
        try broker.publish("evcapture/b/trigger", "{\"command\":\"photo\",\"trigger\":\"after-restart\"}")
        let again = stationB.waitFor { $0.event == "action" && $0.string("action") == "photo" && $0.string("trigger") == "after-restart" }
        #expect(again?.object.string("file") == "\(b.output)/after-restart-b.jpg", "\(stationB.transcript)")

        // A dies without a word: the broker says so for it (last will).
        #expect(watch2.waitFor(timeout: .seconds(30)) { t, p in t == "evcapture/a/status" && p == "online" } != nil)
        kill(stationA.pid, SIGKILL)
        #expect(watch2.waitFor(timeout: .seconds(30)) { t, p in t == "evcapture/a/status" && p == "offline" } != nil, "\(watch2.messages)")
        #expect(try broker.retained("evcapture/a/status") == "offline")
        #expect(try broker.retained("evcapture/b/status") == "online")
    }

    /// Without `[mqtt]` the daemon has no IP socket at all; with it, it has one (so the check
    /// can see one).
    @Test func noMQTTTableMeansNoNetworkSocket() throws {
        let brokerScratch = try ScratchDirectory(prefix: "broker")
        let broker = try MosquittoBroker(directory: brokerScratch.url.path)
        try broker.start()
        for withMQTT in [false, true] {
            let scratch = try DaemonScratch(withMQTT ? "with-mqtt" : "without-mqtt")
            let config = try scratch.write(
                "evcapture.toml",
                "[camera]\ndevice = \"none\"\n" + (withMQTT ? "[mqtt]\nurl = \"\(broker.url)\"\nstation = \"s\"\n" : ""))
            let daemon = try DaemonProcess(
                scratch.label, arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
            defer { daemon.terminate() }
            try #require(daemon.waitFor(DaemonLines.session("started")) != nil, "\(daemon.transcript)")
            if withMQTT {
                _ = pollUntil(timeout: .seconds(10)) { (try? broker.retained("evcapture/s/status")) == "online" }
            }
            let inet = Self.ipSockets(of: daemon.pid)
            if withMQTT {
                #expect(inet.count == 1, "\(inet)")
            } else {
                #expect(inet.isEmpty, "a daemon without [mqtt] has IP sockets: \(inet)")
            }
        }
    }

    /// The process's own TCP/UDP/raw (v4 and v6) sockets: its fds' socket inodes found in
    /// /proc/net — less those the test process holds too (descriptors a child inherits are
    /// not sockets it opened).
    static func ipSockets(of pid: pid_t) -> [String] {
        func socketInodes(_ fdDir: String) -> Set<String> {
            Set(
                ((try? FileManager.default.contentsOfDirectory(atPath: fdDir)) ?? []).compactMap { fd -> String? in
                    guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdDir)/\(fd)"),
                        target.hasPrefix("socket:[")
                    else { return nil }
                    return String(target.dropFirst("socket:[".count).dropLast())
                })
        }
        let inodes = socketInodes("/proc/\(pid)/fd").subtracting(socketInodes("/proc/self/fd"))
        var found: [String] = []
        for table in ["tcp", "tcp6", "udp", "udp6", "raw", "raw6"] {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/net/\(table)", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                if fields.count > 9, inodes.contains(String(fields[9])) { found.append("\(table): \(line)") }
            }
        }
        return found
    }
}
