import Vocabulary
import MQTT
@testable import Rig
import Testing

@Suite struct RigTopicsTests {
    let topics = RigTopics(RigSettings(station: "cam-1", prefix: "evcapture", groups: ["left"], fanOut: .all))

    @Test func everyTopicOfAStation() {
        #expect(topics.status == "evcapture/cam-1/status")
        #expect(topics.event("capture") == "evcapture/cam-1/event/capture")
        #expect(topics.ownTrigger == "evcapture/cam-1/trigger")
        #expect(topics.allTrigger == "evcapture/all/trigger")
        #expect(topics.groupTrigger("left") == "evcapture/group/left/trigger")
        #expect(topics.triggerSubscriptions == ["evcapture/cam-1/trigger", "evcapture/all/trigger", "evcapture/group/left/trigger"])
        #expect(topics.fanOutTopic == "evcapture/all/trigger")
        #expect(RigTopics(RigSettings(station: "a", fanOut: .group("g"))).fanOutTopic == "evcapture/group/g/trigger")
        #expect(RigTopics(RigSettings(station: "a")).fanOutTopic == nil)
        #expect(topics.online() == MQTTMessage(topic: "evcapture/cam-1/status", text: "online", qos: .atLeastOnce, retain: true))
        #expect(topics.offline() == MQTTMessage(topic: "evcapture/cam-1/status", text: "offline", qos: .atLeastOnce, retain: true))
    }

    /// A JSON line goes to the topic of its `event` field, whole, not retained; control
    /// values at QoS 0, everything else at QoS 1.
    @Test(arguments: [
        (#"{"event":"capture","phase":"began","press":1,"time":1.5}"#, "evcapture/cam-1/event/capture", QoS.atLeastOnce),
        (#"{"event":"action","action":"photo","trigger":"a-1-1","file":"/x.jpg","time":2}"#, "evcapture/cam-1/event/action", .atLeastOnce),
        (#"{"event":"control","control":"zoom","value":1.5,"time":3}"#, "evcapture/cam-1/event/control", .atMostOnce),
        (#"{"event":"error","message":"x","time":4}"#, "evcapture/cam-1/event/error", .atLeastOnce),
        (#"{"event":"session","state":"started","time":0}"#, "evcapture/cam-1/event/session", .atLeastOnce),
    ])
    func linesMapToEventTopics(_ line: String, _ topic: String, _ qos: QoS) throws {
        let m = try #require(topics.message(forLine: line))
        #expect(m.topic == topic)
        #expect(m.qos == qos)
        #expect(!m.retain)
        #expect(m.payload == Array(line.utf8))
    }

    @Test(arguments: ["", "not json", #"{"time":1,"event":"capture"}"#, #"{"event":"a/b","time":1}"#, ##"{"event":"#","time":1}"##])
    func linesWithoutAUsableEventAreNotPublished(_ line: String) {
        #expect(topics.message(forLine: line) == nil)
    }
}

@Suite struct TriggerMessageTests {
    func parse(_ text: String) throws(TriggerMessageError) -> TriggerMessage { try TriggerMessage.parse(Array(text.utf8)) }

    @Test func aFullMessage() throws {
        let m = try parse(#"{"command":"photo","trigger":"cam-1-1764000000123-7","time":1764000000.123456,"from":"cam-1"}"#)
        #expect(m == TriggerMessage(command: .photo, trigger: "cam-1-1764000000123-7", time: 1764000000.123456, from: "cam-1"))
    }

    @Test func onlyTheCommandIsRequired() throws {
        #expect(try parse(#"{"command":"video-start"}"#) == TriggerMessage(command: .videoStart))
        #expect(try parse(#" { "command" : "video-stop" , "trigger":"x" } "#) == TriggerMessage(command: .videoStop, trigger: "x"))
        #expect(try parse(#"{"command":"photo","time":1764000000}"#).time == 1764000000)
    }

    @Test func encodedMessagesParseBackTheSame() throws {
        for m in [
            TriggerMessage(command: .photo, trigger: "a-1-2", time: 1764000000.5, from: "a"),
            TriggerMessage(command: .videoStop),
            TriggerMessage(command: .videoStart, trigger: "b.c_d", time: 1764000001.25),
        ] {
            #expect(try parse(m.json) == m, "\(m.json)")
        }
        #expect(
            TriggerMessage(command: .photo, trigger: "a-1-2", time: 1764000000.5, from: "a").json
                == #"{"command":"photo","trigger":"a-1-2","time":1764000000.500000,"from":"a"}"#)
    }

    /// Every refusal names its problem; none of them crashes.
    static let bad: [(String, String)] = [
        ("", "trigger message is not a JSON object (like {\"command\":\"photo\"})"),
        ("photo", "trigger message is not a JSON object (like {\"command\":\"photo\"})"),
        (#"["photo"]"#, "trigger message is not a JSON object (like {\"command\":\"photo\"})"),
        (#"{"command":"photo""#, "trigger message is not a JSON object (like {\"command\":\"photo\"})"),
        ("{}", #"trigger message has no "command" ("photo", "video-start", "video-stop")"#),
        (#"{"command":"shoot"}"#, #"trigger message "command" must be one of "photo", "video-start", "video-stop", not "shoot""#),
        (#"{"command":1}"#, #"trigger message "command" must be one of "photo", "video-start", "video-stop", not 1"#),
        (#"{"command":null}"#, #"trigger message "command" must be one of "photo", "video-start", "video-stop", not null"#),
        (#"{"command":"photo","extra":1}"#, #"trigger message has an unknown field "extra" (known: command, trigger, time, from)"#),
        (
            #"{"command":"photo","trigger":"../../etc/passwd"}"#,
            #"trigger message "trigger" has '/' (use letters, digits, '-', '_' and '.')"#
        ),
        (#"{"command":"photo","trigger":".hidden"}"#, #"trigger message "trigger" starts with '.'"#),
        (#"{"command":"photo","trigger":""}"#, #"trigger message "trigger" is empty"#),
        (#"{"command":"photo","trigger":7}"#, #"trigger message "trigger" must be a string, not 7"#),
        (
            #"{"command":"photo","time":"now"}"#,
            #"trigger message "time" must be wall-clock seconds since 1970 (like 1764000000.123), not "now""#
        ),
        (
            #"{"command":"photo","time":12345.6}"#,
            #"trigger message "time" must be wall-clock seconds since 1970 (like 1764000000.123), not 12345.6"#
        ),
        (
            #"{"command":"photo","time":1764000000123}"#,
            #"trigger message "time" must be wall-clock seconds since 1970 (like 1764000000.123), not 1764000000123"#
        ),
        (#"{"command":"photo","from":"a b"}"#, #"trigger message "from" has ' ' (use letters, digits, '-', '_' and '.')"#),
        (#"{"command":"photo","from":{"x":1}}"#, #"trigger message "from" must be a string, not an array or object"#),
    ]

    @Test(arguments: bad)
    func badMessagesAreRefusedWithTheirProblem(_ text: String, _ expected: String) {
        do {
            let m = try parse(text)
            Issue.record("accepted \(text) as \(m)")
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test func oversizedAndNonUTF8PayloadsAreRefused() {
        let big = Array((#"{"command":"photo","trigger":""# + String(repeating: "a", count: 5000) + #""}"#).utf8)
        #expect(throws: TriggerMessageError("is \(big.count) bytes, more than 4096")) { try TriggerMessage.parse(big) }
        #expect(throws: TriggerMessageError("is not UTF-8 text")) { try TriggerMessage.parse([0x7b, 0xff, 0x7d]) }
    }

    @Test func triggerIDsUpTo128Characters() {
        #expect(TriggerMessage.problem(withID: String(repeating: "a", count: 128)) == nil)
        #expect(TriggerMessage.problem(withID: String(repeating: "a", count: 129)) == "is longer than 128 characters")
        // The longest station name still makes a valid id.
        let id = FanOutPolicy.id(station: String(repeating: "s", count: 64), pressTime: 9_999_999_999.999, press: PressID(rawValue: .max))
        #expect(TriggerMessage.problem(withID: id) == nil, "\(id)")
    }
}

@Suite struct FanOutPolicyTests {
    static let device = CaptureDevice(name: "gpio-keys", node: "/dev/input/event3", bus: .host)

    /// An event of press `press`, `after` seconds from its `began` (kernel time 0).
    func event(
        _ phase: CapturePhase, press: UInt64, after: Double = 0, gesture: Gesture? = nil, action: CaptureAction = .primary,
        reason: CancelReason? = nil
    ) -> CaptureEvent {
        CaptureEvent(
            phase: phase, action: action, button: .volumeDown, device: Self.device, press: PressID(rawValue: press),
            time: Timestamp(microseconds: Int64((after * 1_000_000).rounded())), began: Timestamp(microseconds: 0), reason: reason,
            gesture: gesture)
    }

    @Test func aClickIsOnePhotoTriggerWithThePressTime() {
        var policy = FanOutPolicy(station: "cam-1", sendsTriggers: true)
        let began = policy.handle(event(.began, press: 4), wallTime: 1764000000.25)
        #expect(began == .init(trigger: nil, pressTime: 1764000000.25, messages: []))
        let ended = policy.handle(event(.ended, press: 4, after: 0.15, gesture: .click), wallTime: 1764000000.40)
        let id = "cam-1-1764000000250-4"
        #expect(ended.trigger == id)
        #expect(ended.pressTime == 1764000000.25)
        #expect(ended.messages == [TriggerMessage(command: .photo, trigger: id, time: 1764000000.25, from: "cam-1")])
    }

    @Test func aLongPressStartsAndStopsVideoWithOneID() {
        var policy = FanOutPolicy(station: "cam-1", sendsTriggers: true)
        _ = policy.handle(event(.began, press: 5), wallTime: 1764000010.0)
        let held = policy.handle(event(.held, press: 5, after: 0.5, gesture: .longPress), wallTime: 1764000010.5)
        let id = "cam-1-1764000010000-5"
        #expect(held.messages == [TriggerMessage(command: .videoStart, trigger: id, time: 1764000010.0, from: "cam-1")])
        #expect(held.trigger == id)
        let ended = policy.handle(event(.ended, press: 5, after: 3), wallTime: 1764000013.0)
        #expect(ended.messages == [TriggerMessage(command: .videoStop, trigger: id, time: 1764000010.0, from: "cam-1")])
        #expect(ended.trigger == id)
    }

    @Test func aCancelledLongPressStopsTheRigsVideoToo() {
        var policy = FanOutPolicy(station: "s", sendsTriggers: true)
        _ = policy.handle(event(.began, press: 1), wallTime: 1764000000)
        _ = policy.handle(event(.held, press: 1, after: 0.5, gesture: .longPress), wallTime: 1764000000.5)
        let cancelled = policy.handle(event(.cancelled, press: 1, after: 1, reason: .deviceRemoved), wallTime: 1764000001)
        #expect(cancelled.messages.map(\.command) == [.videoStop])
        // Nothing left over: the same press id again is a new press.
        _ = policy.handle(event(.began, press: 1), wallTime: 1764000100)
        #expect(policy.handle(event(.ended, press: 1, after: 0.1), wallTime: 1764000100.1).messages.isEmpty)
    }

    @Test func secondaryPressesAndCancelledClicksSendNothing() {
        var policy = FanOutPolicy(station: "s", sendsTriggers: true)
        _ = policy.handle(event(.began, press: 2, action: .secondary), wallTime: 1764000000)
        #expect(
            policy.handle(event(.ended, press: 2, after: 0.1, gesture: .click, action: .secondary), wallTime: 1764000000.1).messages.isEmpty
        )
        _ = policy.handle(event(.began, press: 3), wallTime: 1764000000)
        #expect(policy.handle(event(.cancelled, press: 3, after: 0.1, reason: .eventsLost), wallTime: 1764000000.1).messages.isEmpty)
    }

    @Test func fanOutNoneGivesPressTimesOnly() {
        var policy = FanOutPolicy(station: "s", sendsTriggers: false)
        _ = policy.handle(event(.began, press: 9), wallTime: 1764000000.5)
        let ended = policy.handle(event(.ended, press: 9, after: 0.2, gesture: .click), wallTime: 1764000000.7)
        #expect(ended == .init(trigger: nil, pressTime: 1764000000.5, messages: []))
    }

    /// The press time comes with the event (its `began`), so a policy that never saw the
    /// press go down (the rig link started while the button was held) still gives the
    /// moment it went down, not the release's; 0.1 s held is 0.1 s before.
    @Test func aPressWhoseBeganWasNotSeenKeepsItsOwnPressTime() {
        var policy = FanOutPolicy(station: "cam-1", sendsTriggers: true)
        let ended = policy.handle(event(.ended, press: 7, after: 0.1, gesture: .click), wallTime: 1764000000.35)
        #expect(ended.pressTime.map { abs($0 - 1764000000.25) < 1e-6 } == true, "\(ended)")
        #expect(ended.trigger == "cam-1-1764000000250-7")
        let held = policy.handle(event(.held, press: 8, after: 0.5, gesture: .longPress), wallTime: 1764000002.5)
        #expect(held.messages.map(\.time) == [1764000002.0])
    }
}
