import EvcaptureTesting
@testable import Capture
import Evdev
import Vocabulary
import Testing

/// Counter axes (`slider:counter`): the Contour ShuttleXpress / ShuttlePro jog wheel's
/// `REL_DIAL` carries the wheel's 8-bit position, not a step.
@Suite struct ControlsCounterTests {
    static let counter = RoleAssignment(role: .slider, source: .udev, reason: "test", reading: .counter)

    /// The ShuttleXpress fixture's description with the jog as a counter (the shuttle ring's
    /// REL_WHEEL has no role, as the shipped rule says).
    static func jog() throws -> SliderDecoder {
        let d = try EvemuRecording.load(path: Fixtures.path("contour-shuttlexpress-jog.evemu")).description
        return SliderDecoder(profile: DeviceProfile(description: d, node: "jog", roles: [.relDial: counter]))
    }

    func slides(_ decoder: inout SliderDecoder, _ values: [Int32]) -> [Int] {
        values.map { v in
            decoder.decode(frame(0, (.relDial, v))).reduce(0) { sum, input in
                if case .slide(let d) = input { sum + d } else { sum }
            }
        }
    }

    @Test func theFirstValueOnlySetsTheReference() throws {
        var jog = try Self.jog()
        #expect(jog.counterAxes == [EventCode.relDial.code] && jog.relativeUnits.isEmpty && jog.isSliderCapable)
        // Whatever the first position (either end of the range, or the middle), no movement.
        for first: Int32 in [1, 128, 255] {
            var fresh = try Self.jog()
            #expect(fresh.decode(frame(0, (.relDial, first))).isEmpty)
        }
        #expect(jog.decode(frame(0, (.relDial, 200))).isEmpty)
        #expect(jog.decode(frame(0, (.relDial, 201))) == [.slide(1)])
    }

    @Test func stepsAreTheChangeMod256ReadSigned() throws {
        var jog = try Self.jog()
        #expect(slides(&jog, [10, 11, 13, 12, 9]) == [0, 1, 2, -1, -3])
        // Up across the wrap: 255 → 1 is two steps (the kernel never passes position 0, an
        // EV_REL 0), 255 → 0 → … is not seen, then 1 → 2.
        var up = try Self.jog()
        #expect(slides(&up, [254, 255, 1, 2]) == [0, 1, 2, 1])
        // Down across the wrap: 1 → 255 is −2, 2 → 1 → 255 → 254.
        var down = try Self.jog()
        #expect(slides(&down, [2, 1, 255, 254]) == [0, -1, -2, -1])
        // A fast spin: the largest forward step is +127, beyond that it reads as backwards.
        var fast = try Self.jog()
        #expect(slides(&fast, [1, 128, 255, 127, 1]) == [0, 127, 127, -128, -126])
    }

    @Test func repeatsOfTheSamePositionAreNoMovement() throws {
        var jog = try Self.jog()
        #expect(slides(&jog, [40, 40, 41, 41, 41]) == [0, 0, 1, 0, 0])
        // In the shuttle ring's frames, the jog position repeats; the ring itself has no role.
        #expect(jog.decode(frame(0, (.relWheel, 3), (.relDial, 41))).isEmpty)
        #expect(jog.decode(frame(0, (.relWheel, 5), (.relDial, 42))) == [.slide(1)])
    }

    @Test func observedFramesMoveTheReferenceWithoutSliding() throws {
        var jog = try Self.jog()
        #expect(jog.followsPositions)
        #expect(slides(&jog, [5, 6]) == [0, 1])
        // Turned while the session was stopped: followed, not acted on.
        jog.observe(frame(0, (.relDial, 30)))
        jog.observe(frame(0, (.relDial, 31)))
        #expect(slides(&jog, [32]) == [1])
    }

    @Test func aCounterOnAWheelCodeIsNotAlsoCountedAsAWheel() throws {
        // A configured shuttle ring: REL_WHEEL as a counter is a position, never detents.
        let d = DeviceDescription(name: "ring", bus: .usb, codes: [.synReport, .relWheel, .relDial])
        var decoder = SliderDecoder(profile: DeviceProfile(description: d, node: "n", roles: [.relWheel: Self.counter]))
        #expect(decoder.relativeUnits.isEmpty && decoder.counterAxes == [EventCode.relWheel.code])
        #expect(decoder.decode(frame(0, (.relWheel, 3))).isEmpty)
        #expect(decoder.decode(frame(0, (.relWheel, 5))) == [.slide(2)])
    }

    @Test func stepsAreReadAsStepsWithoutTheFlag() throws {
        // Why the flag matters: read as steps, the first report of position 250 is 250 detents.
        let d = try EvemuRecording.load(path: Fixtures.path("contour-shuttlexpress-jog.evemu")).description
        var plain = SliderDecoder(profile: DeviceProfile(description: d, node: "jog", roles: [.relDial: slider]))
        #expect(plain.decode(frame(0, (.relDial, 250))) == [.slide(250)])
    }
}
