import Testing
import Vocabulary

@Suite struct EventCodeTests {
    @Test func namesRoundTrip() {
        #expect(EventCode.volumeDown.name == "KEY_VOLUMEDOWN")
        #expect(EventCode(name: "REL_WHEEL_HI_RES") == .relWheelHiRes)
        #expect(EventCode(name: "KEY_CAMERA_FOCUS") == .cameraFocus)
        #expect(EventCode(name: "BTN_0") == .btn0)
        #expect(EventCode(name: "NOT_A_CODE") == nil)
        #expect(EventType.key.name == "EV_KEY")
    }

    @Test func timestampsPrintWithMicroseconds() {
        #expect(Timestamp(seconds: 12, microseconds: 345_678).description == "12.345678")
        #expect(Timestamp(seconds: 0, microseconds: 1).description == "0.000001")
        #expect(Timestamp(microseconds: 1_000_000) + .milliseconds(500) == Timestamp(microseconds: 1_500_000))
    }
}
