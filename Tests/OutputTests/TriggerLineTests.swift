import Vocabulary
import Output
import Testing

@Suite struct TriggerLineTests {
    @Test func actionLinesCarryTheTriggerAndOnlyLocalPressesHaveAPress() {
        var photo = PhotoResult(path: "/o/a-1-2-cam.jpg", width: 320, height: 240, bytes: 100)
        #expect(
            JSONLines.outcome(.photoSaved(photo, press: 2), time: Timestamp(microseconds: 1_500_000))
                == #"{"event":"action","action":"photo","press":2,"file":"/o/a-1-2-cam.jpg","time":1.500000}"#)
        photo.trigger = "a-1-2"
        #expect(
            JSONLines.outcome(.photoSaved(photo, press: 0), time: Timestamp(microseconds: 1_500_000))
                == #"{"event":"action","action":"photo","trigger":"a-1-2","file":"/o/a-1-2-cam.jpg","time":1.500000}"#)
        #expect(
            JSONLines.outcome(.videoStarted(press: 5, trigger: "a-9-5"), time: Timestamp(microseconds: 2_000_000))
                == #"{"event":"action","action":"video-started","press":5,"trigger":"a-9-5","time":2.000000}"#)
    }

    /// A station's line for a trigger message it took, before the command runs.
    @Test func aTakenTriggerMessageIsAnActionLineWithItsCommandIdAndTopic() {
        let outcome = ActionOutcome.triggerReceived(.videoStart, trigger: "a-1764000000123-7", topic: "evcapture/all/trigger")
        #expect(
            JSONLines.outcome(outcome, time: Timestamp(microseconds: 2_500_000))
                == #"{"event":"action","action":"trigger","command":"video-start","trigger":"a-1764000000123-7","topic":"evcapture/all/trigger","time":2.500000}"#
        )
        #expect(
            ReadableLines.outcome(outcome, time: Timestamp(microseconds: 2_500_000)).hasSuffix(
                "trigger   video-start trigger a-1764000000123-7 (evcapture/all/trigger)"))
    }
}
