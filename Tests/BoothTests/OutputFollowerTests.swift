import Booth
import Testing

@Suite struct OutputFollowerTests {
    @Test func aPulseAtTheShotLastsItsLength() {
        var f = OutputFollower(rule: .pulseAtShot(length: 200_000))
        f.handle(.shot(time: 1_000_000), now: 900_000)
        #expect(!f.level(at: 999_999))
        #expect(f.nextChange(after: 900_000) == 1_000_000)
        #expect(f.level(at: 1_000_000))
        #expect(f.nextChange(after: 1_000_000) == 1_200_000)
        #expect(!f.level(at: 1_200_000))
        #expect(f.nextChange(after: 1_200_000) == nil)
    }

    @Test func aPulseForAPastMomentStartsNowWithItsWholeLength() {
        var f = OutputFollower(rule: .pulseAtShot(length: 1_000))
        f.handle(.shot(time: 0), now: 50_000)
        #expect(f.level(at: 50_000) && f.level(at: 50_999) && !f.level(at: 51_000))
    }

    /// A shot known ahead (docs/booth.md#outputs) is planned: the level changes at its moment
    /// by the output's own timer, and the shot's own event then adds no second pulse, also
    /// when it comes after the pulse ended.
    @Test func aShotKnownAheadPulsesAtItsMomentOnceAndItsShotAddsNothing() {
        var f = OutputFollower(rule: .pulseAtShot(length: 100_000))
        f.handle(.shotDue(time: 1_000_000), now: 500_000)
        #expect(!f.level(at: 999_999) && f.level(at: 1_000_000))
        #expect(f.nextChange(after: 500_000) == 1_000_000)
        f.handle(.shotDue(time: 1_000_000), now: 600_000)  // announced again (every countdown tick)
        f.handle(.shot(time: 1_000_000), now: 1_003_000)  // the shot, 3 ms after its moment
        #expect(f.level(at: 1_099_999) && !f.level(at: 1_100_000))
        #expect(f.nextChange(after: 1_003_000) == 1_100_000)
        #expect(f.nextChange(after: 1_100_000) == nil, "a second pulse")
        // The next one's shot reported after its pulse was over: nothing more.
        f.handle(.shotDue(time: 2_000_000), now: 1_500_000)
        #expect(f.nextChange(after: 1_500_000) == 2_000_000)
        #expect(f.nextChange(after: 2_000_000) == 2_100_000)
        #expect(f.nextChange(after: 2_100_000) == nil)
        f.handle(.shot(time: 2_000_000), now: 2_250_000)
        #expect(!f.level(at: 2_250_000) && f.nextChange(after: 2_250_000) == nil, "a pulse after the pulse")
        // A shot that was not announced pulses as before.
        f.handle(.shot(time: 3_000_000), now: 3_000_500)
        #expect(f.level(at: 3_000_500) && !f.level(at: 3_100_500))
    }

    /// A moment already here is left to its shot; cancelling drops the planned pulses that
    /// have not started, not one under way; other rules ignore both.
    @Test func aPlannedPulseIsDroppedWhenItsShotsAreCancelledUnlessItHasBegun() {
        var f = OutputFollower(rule: .pulseAtShot(length: 100_000))
        f.handle(.shotDue(time: 1_000_000), now: 1_000_000)
        #expect(!f.level(at: 1_000_000) && f.nextChange(after: 1_000_000) == nil)
        f.handle(.shotDue(time: 2_000_000), now: 1_000_000)
        f.handle(.shotsCancelled, now: 1_999_999)
        #expect(!f.level(at: 2_000_000) && f.nextChange(after: 1_999_999) == nil)
        f.handle(.shotDue(time: 3_000_000), now: 2_500_000)
        f.handle(.shotsCancelled, now: 3_000_000)  // under way at its first µs
        #expect(f.level(at: 3_050_000))
        // Cancelled, its shot still comes (a stop that crossed it): it pulses as it comes.
        f.handle(.shotDue(time: 4_000_000), now: 3_500_000)
        f.handle(.shotsCancelled, now: 3_600_000)
        f.handle(.shot(time: 4_000_000), now: 4_001_000)
        #expect(f.level(at: 4_001_000) && !f.level(at: 4_101_000))
        for rule in [OutputRule.pulseAtBegan(length: 100_000), .countdown, .session, .recording] {
            var g = OutputFollower(rule: rule)
            g.handle(.shotDue(time: 1_000_000), now: 0)
            #expect(!g.level(at: 1_000_000) && g.nextChange(after: 0) == nil, "\(rule)")
        }
    }

    @Test func pulseRangeEnds() {
        for length in [OutputRule.pulseRange.lowerBound, OutputRule.pulseRange.upperBound] {
            var f = OutputFollower(rule: .pulseAtBegan(length: length))
            f.handle(.began(time: 0), now: 0)
            #expect(f.level(at: length - 1) && !f.level(at: length))
        }
    }

    @Test func countdownBlinksHalfOfEachSecondAndStopsAtTheShot() {
        var f = OutputFollower(rule: .countdown)
        f.handle(.countdownStarted(start: 0, shot: 2_000_000), now: 0)
        #expect(f.level(at: 0) && !f.level(at: 500_000) && f.level(at: 1_000_000) && !f.level(at: 1_999_999))
        #expect(f.nextChange(after: 0) == 500_000)
        #expect(f.nextChange(after: 500_000) == 1_000_000)
        #expect(!f.level(at: 2_000_000))
        f.handle(.countdownEnded, now: 600_000)
        #expect(!f.level(at: 1_000_000))
    }

    @Test func sessionAndRecordingHoldTheLevel() {
        var s = OutputFollower(rule: .session)
        s.handle(.session(running: true), now: 0)
        #expect(s.level(at: 10))
        s.handle(.recording(true), now: 0)
        s.handle(.session(running: false), now: 5)
        #expect(!s.level(at: 10))
        var r = OutputFollower(rule: .recording)
        r.handle(.session(running: true), now: 0)
        #expect(!r.level(at: 1))
        r.handle(.recording(true), now: 1)
        #expect(r.level(at: 2))
        r.handle(.recording(false), now: 3)
        #expect(!r.level(at: 4))
    }
}
