@testable import Actions
import Capture
import Evdev
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
}
