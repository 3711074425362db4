@testable import Actions
import Testing
import Vocabulary
@testable import Recording

/// Trigger ids: the `{trigger}` token, the hook variable, which stop ends which recording.
@Suite struct TriggerIDTests {
    @Test func theTriggerTokenIsTheIDOrThePress() throws {
        let pattern = try FileNamePattern("{trigger}-{kind}.jpg")
        #expect(
            pattern.name(time: 0, press: 3, action: .primary, kind: "photo", trigger: "cam-1-1764000000123-3")
                == "cam-1-1764000000123-3-photo.jpg")
        #expect(pattern.name(time: 0, press: 3, action: .primary, kind: "photo") == "press3-photo.jpg")
        #expect(throws: FileNamePattern.PatternError.self) { try FileNamePattern("{trig}.jpg") }
    }

    @Test func hooksSeeTheTriggerID() {
        var t = ActionTrigger(
            kind: .photo, action: nil, button: "", deviceName: "mqtt", deviceNode: "evcapture/all/trigger", press: 0,
            time: Timestamp(microseconds: 1))
        #expect(t.environment["EVCAPTURE_TRIGGER"] == nil)
        t.triggerID = "take-12"
        #expect(t.environment["EVCAPTURE_TRIGGER"] == "take-12")
    }

    func trigger(press: PressID, id: String?) -> ActionTrigger {
        ActionTrigger(
            kind: .ended, action: .primary, button: "KEY_VOLUMEDOWN", deviceName: "d", deviceNode: "/n", press: press,
            time: Timestamp(microseconds: 1),
            triggerID: id)
    }

    @Test func aStopEndsOnlyItsOwnRecording() {
        // A local press stops the recording of its own press.
        #expect(ActionRunner.stop(trigger(press: 4, id: nil), ends: trigger(press: 4, id: nil)))
        #expect(!ActionRunner.stop(trigger(press: 5, id: nil), ends: trigger(press: 4, id: nil)))
        #expect(ActionRunner.stop(trigger(press: 4, id: "a-1-4"), ends: trigger(press: 4, id: "a-1-4")))
        // A trigger message's stop: its id, or without one any recording a trigger message started.
        #expect(ActionRunner.stop(trigger(press: 0, id: "a-1-4"), ends: trigger(press: 4, id: "a-1-4")))
        #expect(!ActionRunner.stop(trigger(press: 0, id: "other"), ends: trigger(press: 0, id: "a-1-4")))
        #expect(ActionRunner.stop(trigger(press: 0, id: nil), ends: trigger(press: 0, id: "x")))
        #expect(!ActionRunner.stop(trigger(press: 0, id: nil), ends: trigger(press: 4, id: nil)))
    }
}
