import EvcaptureTesting
import Foundation
import MQTT
@testable import Rig
import Testing
import Vocabulary

/// Home Assistant discovery: the exact topics, and each payload read back as JSON.
@Suite struct HomeAssistantDiscoveryTests {
    let discovery = HomeAssistantDiscovery(RigSettings(station: "cam-3", prefix: "studio/rig", discoveryPrefix: "ha"))!

    func object(_ m: MQTTMessage) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(m.payload)) as? [String: Any])
    }

    func message(_ topic: String) throws -> [String: Any] {
        try object(#require(discovery.messages.first { $0.topic == topic }, "no \(topic)"))
    }

    @Test func topicsAreRetainedAtQoS1() {
        let node = "studio_rig_cam-3"
        #expect(discovery.nodeID == node)
        #expect(
            discovery.messages.map(\.topic) == [
                "ha/binary_sensor/\(node)/status/config",
                "ha/device_automation/\(node)/primary-click/config",
                "ha/device_automation/\(node)/primary-long-press/config",
                "ha/device_automation/\(node)/primary-double-click/config",
                "ha/device_automation/\(node)/secondary-click/config",
                "ha/device_automation/\(node)/secondary-long-press/config",
                "ha/device_automation/\(node)/secondary-double-click/config",
                "ha/button/\(node)/photo/config",
                "ha/button/\(node)/video-start/config",
                "ha/button/\(node)/video-stop/config",
                "ha/camera/\(node)/photo/config",
            ])
        #expect(discovery.messages.allSatisfy { $0.retain && $0.qos == .atLeastOnce })
    }

    /// Every config names the same device, so Home Assistant shows one device per station.
    @Test func everyConfigNamesTheStationsDevice() throws {
        for m in discovery.messages {
            let device = try #require(object(m)["device"] as? [String: Any], "\(m.topic)")
            #expect(device["identifiers"] as? [String] == ["evcapture:studio/rig/cam-3"], "\(m.topic)")
            #expect(device["name"] as? String == "cam-3")
            #expect(device["manufacturer"] as? String == "evcapture")
            #expect((try object(m)["origin"] as? [String: Any])?["name"] as? String == "evcapture")
        }
    }

    @Test func statusIsAConnectivitySensorOnTheStatusTopic() throws {
        let s = try message("ha/binary_sensor/studio_rig_cam-3/status/config")
        #expect(s["unique_id"] as? String == "evcapture:studio/rig/cam-3:status")
        #expect(s["state_topic"] as? String == "studio/rig/cam-3/status")
        #expect(s["payload_on"] as? String == "online")
        #expect(s["payload_off"] as? String == "offline")
        #expect(s["device_class"] as? String == "connectivity")
        #expect(s["availability_topic"] == nil)
    }

    @Test func thePhotoButtonSendsAPhotoTriggerToTheStation() throws {
        let b = try message("ha/button/studio_rig_cam-3/photo/config")
        #expect(b["unique_id"] as? String == "evcapture:studio/rig/cam-3:photo")
        #expect(b["command_topic"] as? String == "studio/rig/cam-3/trigger")
        #expect(b["payload_press"] as? String == #"{"command":"photo"}"#)
        #expect(b["availability_topic"] as? String == "studio/rig/cam-3/status")
        #expect(b["payload_available"] as? String == "online")
        #expect(b["payload_not_available"] as? String == "offline")
        #expect(b["qos"] as? Int == 1)
        // What the button sends is a trigger message the station takes.
        let payload = try #require(b["payload_press"] as? String)
        #expect(try TriggerMessage.parse(Array(payload.utf8)) == TriggerMessage(command: .photo))
        let start = try message("ha/button/studio_rig_cam-3/video-start/config")
        #expect(start["payload_press"] as? String == #"{"command":"video-start"}"#)
        #expect(start["unique_id"] as? String == "evcapture:studio/rig/cam-3:video-start")
        #expect(try message("ha/button/studio_rig_cam-3/video-stop/config")["payload_press"] as? String == #"{"command":"video-stop"}"#)
    }

    @Test(arguments: [
        ("primary-click", "button_short_press", "primary", "primary:click"),
        ("primary-long-press", "button_long_press", "primary", "primary:long-press"),
        ("secondary-double-click", "button_double_press", "secondary", "secondary:double-click"),
        ("secondary-click", "button_short_press", "secondary", "secondary:click"),
    ])
    func triggersReadTheCaptureEvents(_ object: String, _ type: String, _ subtype: String, _ payload: String) throws {
        let t = try message("ha/device_automation/studio_rig_cam-3/\(object)/config")
        #expect(t["automation_type"] as? String == "trigger")
        #expect(t["topic"] as? String == "studio/rig/cam-3/event/capture")
        #expect(t["type"] as? String == type)
        #expect(t["subtype"] as? String == subtype)
        #expect(t["payload"] as? String == payload)
        #expect(t["value_template"] as? String == HomeAssistantDiscovery.gestureTemplate)
        #expect(t["unique_id"] == nil)
    }

    @Test func offWhenThereIsNoDiscoveryPrefix() {
        #expect(HomeAssistantDiscovery(RigSettings(station: "a", discoveryPrefix: nil)) == nil)
        let d = HomeAssistantDiscovery(RigSettings(station: "cam.1"))
        #expect(d?.discoveryPrefix == "homeassistant")
        #expect(d?.messages.first?.topic == "homeassistant/binary_sensor/evcapture_cam_1/status/config")
    }

    /// The camera entity: the latest photo's topic, raw JPEG (no `image_encoding`),
    /// unavailable while the station is offline; checked against Home Assistant's schema.
    @Test func theCameraShowsTheLatestPhotoAndFitsHomeAssistantsSchema() throws {
        let c = try message("ha/camera/studio_rig_cam-3/photo/config")
        #expect(c["topic"] as? String == "studio/rig/cam-3/photo")
        #expect(c["unique_id"] as? String == "evcapture:studio/rig/cam-3:photo")
        #expect(c["availability_topic"] as? String == "studio/rig/cam-3/status")
        #expect(c["image_encoding"] == nil, "the photo goes as raw JPEG bytes")
        #expect(c["json_attributes_topic"] == nil, "no live view, no links")
        #expect(HomeAssistantCameraSchema.problems(c) == [])
        #expect(discovery.topics.photo == "studio/rig/cam-3/photo")
    }

    /// With a live view, the device's `configuration_url` is its page (on every entity, one
    /// device) and the camera's attributes are the addresses, retained on their own topic.
    @Test func withALiveViewTheDeviceLinksToItsPage() throws {
        let links = StationLinks(page: "https://cam-3:8443/", mjpeg: "https://cam-3:8443/stream.mjpg", rtsp: "rtsp://cam-3:8554/live")
        let d = try #require(HomeAssistantDiscovery(RigSettings(station: "cam-3", discoveryPrefix: "ha"), links: links))
        let configs = d.messages.filter { $0.topic.hasSuffix("/config") }
        #expect(configs.count == d.messages.count - 1)
        for m in configs {
            let device = try #require(object(m)["device"] as? [String: Any], "\(m.topic)")
            #expect(device["configuration_url"] as? String == "https://cam-3:8443/", "\(m.topic)")
        }
        let camera = try object(#require(configs.first { $0.topic == "ha/camera/evcapture_cam-3/photo/config" }))
        #expect(camera["json_attributes_topic"] as? String == "evcapture/cam-3/links")
        #expect(HomeAssistantCameraSchema.problems(camera) == [])
        let attributes = try #require(d.messages.last)
        #expect(attributes.topic == "evcapture/cam-3/links" && attributes.retain)
        #expect(
            try object(attributes) as NSDictionary
                == [
                    "live_view": "https://cam-3:8443/", "mjpeg_url": "https://cam-3:8443/stream.mjpg", "rtsp_url": "rtsp://cam-3:8554/live",
                ] as NSDictionary)
    }

    /// A clean stop removes every entity (docs/mqtt.md#home-assistant): each discovery
    /// config, the camera's included, emptied and retained; the addresses are not a config
    /// and stay.
    @Test func aCleanStopEmptiesEveryConfigTheCamerasToo() throws {
        let links = StationLinks(page: "http://cam-3:8080/", mjpeg: "http://cam-3:8080/stream.mjpg")
        let d = try #require(HomeAssistantDiscovery(RigSettings(station: "cam-3", discoveryPrefix: "ha"), links: links))
        let configs = d.messages.map(\.topic).filter { $0.hasSuffix("/config") }
        #expect(configs.contains("ha/camera/evcapture_cam-3/photo/config"))
        #expect(d.removals.map(\.topic) == configs)
        #expect(d.removals.allSatisfy { $0.payload.isEmpty && $0.retain && $0.qos == .atLeastOnce })
        #expect(!d.removals.contains { $0.topic == d.topics.links })
    }

    /// The schema check itself refuses what Home Assistant would: a missing topic, an
    /// unknown key, a wrong type, a bad `image_encoding`, a device without identifiers.
    @Test(arguments: [
        (#"{"name":"x"}"#, "topic is required"),
        (#"{"topic":"a/b","image_url":"x"}"#, "image_url is not a key of an MQTT camera"),
        (#"{"topic":3}"#, "topic must be a string"),
        (#"{"topic":"a/b","image_encoding":"hex"}"#, "image_encoding must be one of b64"),
        (#"{"topic":"a/+"}"#, "topic a/+ has a wildcard"),
        (#"{"topic":"a/b","device":{"name":"x"}}"#, "device needs identifiers or connections"),
        (#"{"topic":"a/b","device":{"identifiers":["x"],"colour":"red"}}"#, "device.colour is not a key of a device"),
        (
            #"{"topic":"a/b","device":{"identifiers":["x"],"configuration_url":"ftp://x"}}"#,
            "device.configuration_url ftp://x is not an http(s) or homeassistant:// URL"
        ),
        (#"{"topic":"a/b","availability_mode":"most"}"#, "availability_mode must be one of all, any, latest"),
    ])
    func theSchemaCheckRefusesWhatHomeAssistantWould(_ json: String, _ problem: String) throws {
        let payload = try #require(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(HomeAssistantCameraSchema.problems(payload) == [problem])
    }
}
