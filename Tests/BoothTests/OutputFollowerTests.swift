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
