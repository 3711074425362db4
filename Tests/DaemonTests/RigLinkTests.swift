import EvcaptureTesting
import Foundation
import LinuxIO
import MQTT
import Output
import Rig
import Testing
@testable import EvcaptureDaemon

/// The station's link to the rig, without a broker: the client is made but never started.
@Suite struct RigLinkTests {
    static func link(station: String, loop: IOLoop) throws -> RigLink {
        let rig = RigSettings(station: station, fanOut: .all)
        let topics = RigTopics(rig)
        let connection = MQTTConnectionSettings(
            broker: MQTTBroker(host: "127.0.0.1", port: 1, tls: false), clientID: station,
            subscriptions: topics.triggerSubscriptions.map { (topic: $0, qos: .atLeastOnce) })
        return try RigLink(
            connection: connection, rig: rig, loop: loop, lines: LineWriter(json: true, stdout: false), logger: testLogger,
            onTrigger: { _, _ in })
    }

    /// The warm-up goes the whole way a trigger goes (parsed, accepted, its line formatted):
    /// a sample the schema refused would warm nothing.
    @Test(arguments: ["st1", "warm-up"])
    func theWarmUpTakesTheWholeTriggerPath(station: String) throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let line = try #require(try Self.link(station: station, loop: loop).warmUp())
        #expect(line.hasPrefix(#"{"event":"action""#), "\(line)")
        #expect(line.contains(#""action":"trigger""#) && line.contains(#""command":"photo""#), "\(line)")
        #expect(line.contains(#""topic":"evcapture/\#(station)/trigger""#), "\(line)")
    }
}
