import EvcaptureTesting
@testable import Capture
import Vocabulary
import Testing

/// Rate axes (`slider:rate`, docs/behaviour.md#slider-inputs): the Contour shuttle ring reports
/// where it is held (−7 … +7) while it is turned and nothing once it springs back. Scenario
/// data on a manual clock: the decoder reads no clock, its steps come at its own deadlines.
@Suite struct ControlsRateTests {
    /// A ShuttleXpress as a kernel with hi-res wheels shows it: the jog's REL_DIAL and the
    /// ring on REL_WHEEL and REL_WHEEL_HI_RES, with the known-device table's roles.
    static func shuttle(hiRes: Bool = true) -> (SliderDecoder, DeviceProfile) {
        var codes: Set<EventCode> = [.relDial, .relWheel, .synReport, .key(260)]
        if hiRes { codes.insert(.relWheelHiRes) }
        let d = DeviceDescription(
            name: "Contour Design ShuttleXpress", bus: .usb, vendor: 0x0b33, product: 0x0020, version: 0x0100, codes: codes)
        let profile = RoleClassifier.profile(for: d, node: "shuttle", udevRole: nil)
        return (SliderDecoder(profile: profile), profile)
    }

    /// The ring's report at `t`: REL_WHEEL `p` (and REL_WHEEL_HI_RES 120 × p), the jog's position repeated.
    static func ring(_ t: Double, _ p: Int32, jog: Int32 = 40) -> [InputEvent] {
        frame(t, (.relWheel, p), (.relWheelHiRes, p * 120), (.relDial, jog))
    }

    /// Every step the decoder gives through `until`, from `frames` handed in at their times
    /// and its own deadlines fired in between, as (time in ms, step).
    static func steps(_ decoder: inout SliderDecoder, _ frames: [[InputEvent]], until end: Double) -> [(Int64, Int)] {
        var out: [(Int64, Int)] = []
        func run(through t: Timestamp) {
            while let due = decoder.nextDeadline, due <= t {
                decoder.advance(to: due) { if case .slide(let d) = $0 { out.append((due.microseconds / 1000, d)) } }
            }
        }
        for f in frames {
            let t = f.last!.time
            run(through: t)
            decoder.decode(f, at: t) { if case .slide(let d) = $0 { out.append((t.microseconds / 1000, d)) } }
        }
        run(through: at(end))
        return out
    }

    @Test func theKnownDeviceTableMakesTheRingARateNotDetents() {
        let (decoder, profile) = Self.shuttle()
        #expect(profile.roles[.relWheel]?.reading == .rate && profile.roles[.relWheel]?.source == .knownDevice)
        #expect(profile.warnings.isEmpty, "\(profile.warnings)")
        // Neither wheel code counts detents: the pair is the ring.
        #expect(decoder.relativeUnits.isEmpty)
        #expect(decoder.rateAxes == [EventCode.relWheel.code: 1, EventCode.relWheelHiRes.code: 120])
    }

    /// Turned out to +3 and held: a step at once, then six a second; let go (a report without
    /// the ring): nothing more, however long the clock runs.
    @Test func turnedOutItMovesWhileHeldAndStopsWhenLetGo() {
        var (decoder, _) = Self.shuttle()
        let got = Self.steps(&decoder, [Self.ring(1.0, 3), frame(1.5, (.relDial, 40))], until: 60)
        #expect(got.map(\.0) == [1000, 1166, 1333, 1499], "\(got)")
        #expect(got.allSatisfy { $0.1 == 1 })
        #expect(decoder.ratePosition == 0 && decoder.nextDeadline == nil)
    }

    /// Further out is faster (+7: 14 a second), back the other way steps at once the other
    /// way, and the last reports before rest (the ring springing back through 2, 1) slow it.
    @Test func thePositionSetsTheRateAndTheDirection() {
        var (decoder, _) = Self.shuttle()
        let got = Self.steps(
            &decoder,
            [Self.ring(0.0, 7), Self.ring(0.2, -1), Self.ring(1.0, 2), Self.ring(1.1, 1), frame(1.3, (.relDial, 40))], until: 5)
        let expected: [(Int64, Int)] = [
            (0, 1), (71, 1), (142, 1),  // +7: every 71.4 ms
            (200, -1), (700, -1),  // −1: at once, then every 500 ms
            (1000, 1),  // +2 reverses: at once; +1 at 1.1 re-times the next to 1.6, after the rest at 1.3
        ]
        #expect(got.map(\.0) == expected.map(\.0) && got.map(\.1) == expected.map(\.1), "\(got)")
    }

    /// Where the kernel reports only REL_WHEEL (no hi-res code), the same; and a frame of the
    /// ring carrying the jog's movement gives both.
    @Test func withoutTheHiResCodeAndWithTheJogInTheSameReport() {
        var (decoder, _) = Self.shuttle(hiRes: false)
        #expect(decoder.rateAxes == [EventCode.relWheel.code: 1])
        _ = decoder.decode(frame(0.0, (.relDial, 40)), at: at(0.0))  // the jog's reference
        let first = decoder.decode(frame(0.5, (.relWheel, -4), (.relDial, 42)), at: at(0.5))
        #expect(first == [.slide(1)], "the jog's +2 and the ring's first −1")
        #expect(decoder.nextDeadline == at(0.5) + .microseconds(125_000))
    }

    /// While the session is stopped a held ring moves nothing; its next report once the
    /// session runs starts the rate again.
    @Test func observedWhileStoppedItOwesNothing() {
        var (decoder, _) = Self.shuttle()
        decoder.observe(Self.ring(0.0, 5))
        #expect(decoder.nextDeadline == nil && decoder.ratePosition == 5)
        // Reported again once the session runs: held on, no step at once, the rate from now.
        #expect(decoder.decode(Self.ring(1.0, 5), at: at(1.0)).isEmpty)
        #expect(decoder.nextDeadline == at(1.0) + .microseconds(100_000))
        #expect(decoder.decode(Self.ring(1.1, 6), at: at(1.1)).isEmpty)
        #expect(decoder.nextDeadline == at(1.1) + .microseconds(83_333))
    }

    @Test func theRoleIsSpelledAndCheckedLikeTheCounter() {
        #expect(CodeRole(parsing: "slider:rate") == CodeRole(.slider, reading: .rate))
        #expect(CodeRole(.slider, reading: .rate).spelling == "slider:rate")
        #expect(throws: RoleSyntaxError("KEY_ENTER=slider:rate: only relative axes (REL_*) can report a held position")) {
            try CodeRole.parse("slider:rate", for: .enter).get()
        }
    }
}
