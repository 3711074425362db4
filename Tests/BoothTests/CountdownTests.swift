import Booth
import Testing

/// The countdown's timing, driven by hand (docs/booth.md#countdown).
@Suite struct CountdownTests {
    let s: Int64 = 1_000_000

    @Test func zeroSecondsShootsAtOnce() {
        var c = Countdown(seconds: 0, start: 5 * s)
        #expect(c.deadline == 5 * s)
        #expect(c.advance(to: 5 * s) == [.shot(time: 5 * s)])
        #expect(c.isFinished && c.deadline == nil)
    }

    @Test func threeSecondsTickEachSecondThenShoot() {
        var c = Countdown(seconds: 3, start: 10 * s)
        #expect(c.advance(to: 10 * s) == [.tick(remaining: 3, time: 10 * s, shot: 13 * s)])
        #expect(c.deadline == 11 * s)
        #expect(c.advance(to: 11 * s - 1) == [])
        #expect(c.advance(to: 11 * s) == [.tick(remaining: 2, time: 11 * s, shot: 13 * s)])
        #expect(c.advance(to: 12 * s) == [.tick(remaining: 1, time: 12 * s, shot: 13 * s)])
        #expect(c.deadline == 13 * s)
        #expect(c.advance(to: 13 * s) == [.shot(time: 13 * s)])
        #expect(c.isFinished)
    }

    @Test func maximumSecondsRunsToItsEnd() {
        let n = Countdown.maximumSeconds
        var c = Countdown(seconds: n, start: 0)
        let steps = c.advance(to: Int64(n) * s)
        #expect(steps.count == n + 1)
        #expect(steps.first == .tick(remaining: n, time: 0, shot: Int64(n) * s))
        #expect(steps.last == .shot(time: Int64(n) * s))
    }

    @Test func aLateWakeGetsEveryMissedStepWithItsOwnTime() {
        var c = Countdown(seconds: 2, start: 0)
        #expect(
            c.advance(to: 5 * s) == [
                .tick(remaining: 2, time: 0, shot: 2 * s), .tick(remaining: 1, time: s, shot: 2 * s), .shot(time: 2 * s),
            ])
    }

    @Test func cancelInTheFirstSecond() {
        var c = Countdown(seconds: 3, start: 0)
        _ = c.advance(to: 0)
        #expect(c.cancel(at: 1) == [.cancelled(remaining: 3, time: 1)])
        #expect(c.isFinished && c.advance(to: 10 * s) == [])
    }

    @Test func cancelInTheLastSecond() {
        var c = Countdown(seconds: 3, start: 0)
        _ = c.advance(to: 2 * s)
        #expect(c.cancel(at: 3 * s - 1) == [.cancelled(remaining: 1, time: 3 * s - 1)])
        #expect(c.advance(to: 4 * s) == [])
    }

    @Test func aPressAtTheShotsMomentDoesNotCancelIt() {
        var c = Countdown(seconds: 1, start: 0)
        _ = c.advance(to: 0)
        #expect(c.cancel(at: s) == [.shot(time: s)])
    }
}

@Suite struct TimelapseScheduleTests {
    @Test func theNthShotIsStartPlusNIntervalsWithoutDrift() {
        var t = TimelapseSchedule(start: 1_000, interval: 2_000_000)
        #expect(t.due(at: 1_000).map(\.time) == [1_000])
        // A wake-up 300 ms late does not move the next shot.
        #expect(t.due(at: 2_301_000).map(\.time) == [2_001_000])
        #expect(t.nextTime == 4_001_000)
        // 100 shots later, shot 100 is exactly start + 100 intervals.
        var last: Int64 = 0
        for n in 2...100 { last = t.due(at: t.time(ofShot: n) + 900_000).last!.time }
        #expect(last == 1_000 + 100 * 2_000_000)
    }

    @Test func aLongGapHandsOutEveryShotAndCountsWhatWasMissed() {
        var t = TimelapseSchedule(start: 0, interval: 100_000)
        _ = t.due(at: 0)
        t.recordTaken()
        let due = t.due(at: 450_000)
        #expect(due.map(\.number) == [1, 2, 3, 4])
        for _ in due { t.recordMissed() }
        #expect(t.taken == 1 && t.missed == 4 && t.nextTime == 500_000)
    }

    @Test func intervalRangeEnds() {
        let lo = TimelapseSchedule(start: 0, interval: TimelapseSchedule.intervalRange.lowerBound)
        let hi = TimelapseSchedule(start: 0, interval: TimelapseSchedule.intervalRange.upperBound)
        #expect(lo.time(ofShot: 10) == 1_000_000)
        #expect(hi.time(ofShot: 1) == 86_400_000_000)
    }
}

@Suite struct BurstSelectionTests {
    /// Frames every 33 ms from 0; the moment at 100 ms is nearest frame 3 (99 ms).
    func run(count: Int, before: Int, moment: Int64 = 100_000, from first: Int = 0) -> [Int] {
        var sel = BurstSelection<Int>(moment: moment, count: count, before: before)
        var i = first
        while sel.offer(i, time: Int64(i) * 33_000) { i += 1 }
        return sel.frames
    }

    @Test func twoBeforeTheNearestFrameAndTheRestAfter() {
        #expect(run(count: 5, before: 2) == [1, 2, 3, 4, 5])
    }

    @Test func oneFrameIsTheNearest() {
        #expect(run(count: 1, before: 0) == [3])
        #expect(run(count: 1, before: 0, moment: 115_000) == [3])
        #expect(run(count: 1, before: 0, moment: 117_000) == [4])
    }

    @Test func allBeforeButTheNearest() {
        #expect(run(count: 4, before: 3) == [0, 1, 2, 3])
    }

    @Test func theMaximumCount() {
        let n = BurstSelection<Int>.maximumCount
        #expect(run(count: n, before: 0).count == n)
        #expect(run(count: n, before: 0).first == 3)
    }

    @Test func aRingThatDoesNotReachBackKeepsTheCountWithLaterFrames() {
        #expect(run(count: 5, before: 2, from: 2) == [2, 3, 4, 5, 6])
        #expect(run(count: 3, before: 2, moment: 0) == [0, 1, 2])
    }
}
