#if canImport(Glibc)
import EvcaptureTesting
import Glibc
#endif
import Foundation
import Testing

/// Home Assistant's camera entity (docs/mqtt.md#home-assistant) against the real mosquitto
/// broker in the VM, with the daemon on a real camera (vivid): the discovery config as Home
/// Assistant's MQTT camera schema allows it, the live view's addresses that really answer,
/// and the latest photo's bytes, retained, as the file the station wrote; a clean stop
/// removes the entities.
@Suite(
    .systemTest, .needsDaemonExecutable, .serialized,
    .enabled(if: MosquittoBroker.skipReason == nil, "needs mosquitto and mosquitto-clients on the host"))
struct HomeAssistantSystemTests {
    @Test(.enabled(if: vividNode() != nil, "needs vivid"))
    func theCameraEntityShowsTheLatestPhoto() throws {
        let brokerScratch = try ScratchDirectory(prefix: "broker")
        let broker = try MosquittoBroker(directory: brokerScratch.url.path)
        try broker.start()
        let port = try MosquittoBroker.freePort()
        let scratch = try DaemonScratch("ha-camera")
        let config = try scratch.write(
            "evcapture.toml",
            """
            [camera]
            device = "none"
            capture-device = "\(try #require(vividNode()))"
            width = 320
            height = 240

            [output]
            directory = "\(scratch.output)"

            [mqtt]
            url = "\(broker.url)"
            station = "porch"

            [http]
            listen = "127.0.0.1:\(port)"
            """)
        let daemon = try DaemonProcess("ha-camera", arguments: ["run", "--config", config, "--json"], environment: scratch.environment)
        defer { daemon.terminate() }
        try #require(daemon.waitFor(DaemonLines.session("started")) != nil, "\(daemon.transcript)")
        try #require(
            pollUntil(timeout: .seconds(15)) { (try? broker.retained("evcapture/porch/status")) == "online" }, "\(daemon.transcript)")

        // The discovery config, retained, as Home Assistant reads it.
        let configTopic = "homeassistant/camera/evcapture_porch/photo/config"
        let text = try #require(try broker.retained(configTopic), "no \(configTopic)\n\(broker.log)")
        let camera = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
        #expect(HomeAssistantCameraSchema.problems(camera) == [], "\(text)")
        #expect(camera["topic"] as? String == "evcapture/porch/photo")
        #expect(camera["availability_topic"] as? String == "evcapture/porch/status")
        let device = try #require(camera["device"] as? [String: Any])
        #expect(device["identifiers"] as? [String] == ["evcapture:evcapture/porch"])
        // The addresses lead to the live view: the page and a stream part answer.
        let page = try #require(device["configuration_url"] as? String, "\(device)")
        #expect(page == "http://127.0.0.1:\(port)/")
        #expect(try LiveViewClient.request([page]).status == 200)
        let linksTopic = try #require(camera["json_attributes_topic"] as? String)
        let linksText = try #require(try broker.retained(linksTopic), "no \(linksTopic)")
        let links = try #require(try JSONSerialization.jsonObject(with: Data(linksText.utf8)) as? [String: Any], "\(linksText)")
        let mjpeg = try #require(links["mjpeg_url"] as? String, "\(linksText)")
        let stream = scratch.path + "/stream"
        _ = try LiveViewClient.request(["--max-time", "3", mjpeg], output: stream, timeout: .seconds(20))
        let parts = LiveViewClient.parts([UInt8]((try? Data(contentsOf: URL(fileURLWithPath: stream))) ?? Data()))
        #expect(parts.contains { looksLikeJPEG($0.body) }, "\(mjpeg): \(parts.count) parts")

        // No photo yet: no image.
        #expect(try broker.retainedBytes("evcapture/porch/photo") == nil)

        // Two photos (triggers from the broker, as Home Assistant's Photo button sends): the
        // image is the second, byte for byte.
        var files: [String] = []
        for n in 1...2 {
            let before = daemon.objects.count
            try broker.publish("evcapture/porch/trigger", #"{"command":"photo","trigger":"ha-\#(n)"}"#)
            let photo = try #require(
                daemon.waitFor(from: before) { $0.event == "action" && $0.string("action") == "photo" }, "\(daemon.transcript)")
            files.append(try #require(photo.object.string("file")))
        }
        let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: files[1])))
        let first = [UInt8](try Data(contentsOf: URL(fileURLWithPath: files[0])))
        #expect(looksLikeJPEG(written) && written != first)
        var image: [UInt8]?
        _ = pollUntil(timeout: .seconds(10)) {
            image = try? broker.retainedBytes("evcapture/porch/photo")
            return image == written
        }
        #expect(image == written, "retained \(image?.count ?? 0) bytes, the file \(written.count)")

        // A clean stop removes the station's entities, the camera as the others: every
        // discovery config is emptied; the station says offline, and the last image and the
        // addresses stay for when it is back.
        let configs = try broker.retainedTopics("homeassistant/#")
        #expect(configs.contains(configTopic) && configs.count > 10, "\(configs)")
        #expect(daemon.terminate() == 0, "\(daemon.transcript)")
        #expect(try broker.retained("evcapture/porch/status") == "offline")
        let left = try broker.retainedTopics("homeassistant/#")
        let mqttLines = daemon.transcript.split(separator: "\n").filter { $0.lowercased().contains("mqtt") }.joined(separator: "\n")
        #expect(left == [], "\(left) stayed; the daemon's MQTT lines:\n\(mqttLines)\n\(broker.log)")
        #expect(try broker.retainedBytes("evcapture/porch/photo") == written)
        #expect(try broker.retained(linksTopic) == linksText)
        #expect(daemon.objects.filter { $0.string("code") == "mqtt-photo" }.isEmpty, "\(daemon.transcript)")
    }
}
