#if canImport(Glibc)
import Glibc
#endif
@testable import ConcurrencyRuntime
import Testing

/// The main-thread executor's arithmetic of time (`RuntimeTime`), at both ends of each range:
/// a deadline that has passed runs at once, one beyond 64 bits of nanoseconds never wraps
/// into the past. (docs/architecture.md#threads: the executor of the daemon's tasks on the
/// main thread; `IdleSystemTests` runs it in the daemon.)
struct RuntimeTimeTests {
    static let second: UInt64 = 1_000_000_000

    @Test func runtimeClocksAreTheSystemsClocks() {
        #expect(RuntimeTime.systemClock(ofRuntimeClock: 1) == CLOCK_BOOTTIME)  // ContinuousClock
        #expect(RuntimeTime.systemClock(ofRuntimeClock: 2) == CLOCK_MONOTONIC)  // SuspendingClock
    }

    @Test func secondsAndNanosecondsAtBothEnds() {
        #expect(RuntimeTime.nanoseconds(0, 0) == 0)
        #expect(RuntimeTime.nanoseconds(0, 1) == 1)
        #expect(RuntimeTime.nanoseconds(2, 999_999_999) == 3 * Self.second - 1)
        // Before the clock's start: nothing left to wait.
        #expect(RuntimeTime.nanoseconds(-1, 0) == 0)
        #expect(RuntimeTime.nanoseconds(0, -5) == 0)
        #expect(RuntimeTime.nanoseconds(1, -5) == Self.second - 5)
        // The last second 64 bits of nanoseconds hold, and the first they do not.
        let last = Int64(UInt64.max / Self.second)
        #expect(RuntimeTime.nanoseconds(last, 0) == UInt64(last) * Self.second)
        #expect(RuntimeTime.nanoseconds(last, 999_999_999) == .max)
        #expect(RuntimeTime.nanoseconds(last + 1, 0) == .max)
        #expect(RuntimeTime.nanoseconds(.max, 999_999_999) == .max)
    }

    @Test func remainingAtBothEnds() {
        #expect(RuntimeTime.remaining(until: 10 * Self.second, now: 4 * Self.second) == 6 * Self.second)
        #expect(RuntimeTime.remaining(until: 10, now: 9) == 1)
        #expect(RuntimeTime.remaining(until: 10, now: 10) == 0)
        #expect(RuntimeTime.remaining(until: 10, now: 11) == 0)
        #expect(RuntimeTime.remaining(until: 0, now: .max) == 0)
        #expect(RuntimeTime.remaining(until: .max, now: 0) == .max)
    }

    @Test func deadlinesAtBothEnds() {
        #expect(RuntimeTime.deadline(after: 0, now: 5) == 5)
        #expect(RuntimeTime.deadline(after: 3, now: 5) == 8)
        #expect(RuntimeTime.deadline(after: .max - 5, now: 5) == .max)
        // Task.sleep(nanoseconds: .max) on a running clock: never, not a deadline in the past.
        #expect(RuntimeTime.deadline(after: .max, now: 5) == .max)
        #expect(RuntimeTime.deadline(after: 1, now: .max) == .max)
    }

    @Test func delaysAtBothEnds() {
        #expect(RuntimeTime.nanoseconds(of: .zero) == 0)
        #expect(RuntimeTime.nanoseconds(of: .nanoseconds(-1)) == 0)
        #expect(RuntimeTime.nanoseconds(of: .seconds(-3)) == 0)
        #expect(RuntimeTime.nanoseconds(of: .nanoseconds(1)) == 1)
        // A fraction of a nanosecond is dropped.
        #expect(RuntimeTime.nanoseconds(of: Duration(secondsComponent: 0, attosecondsComponent: 999_999_999)) == 0)
        #expect(RuntimeTime.nanoseconds(of: Duration(secondsComponent: 1, attosecondsComponent: 1_999_999_999)) == Self.second + 1)
        #expect(RuntimeTime.nanoseconds(of: .milliseconds(1500)) == 1_500_000_000)
        #expect(RuntimeTime.nanoseconds(of: .nanoseconds(UInt64.max)) == .max)
        #expect(RuntimeTime.nanoseconds(of: .seconds(Int64.max)) == .max)
    }

    @Test func timersAreLookedAtWhenNothingIsReadyAndEverySixteenBatches() {
        let every = RuntimeTime.batchesBetweenTimerLooks
        #expect(every == 16)
        #expect(!RuntimeTime.looksAtTimers(hasTimers: false, hasReadyJobs: false, batchesSinceLook: 0))
        #expect(!RuntimeTime.looksAtTimers(hasTimers: false, hasReadyJobs: true, batchesSinceLook: every))
        #expect(RuntimeTime.looksAtTimers(hasTimers: true, hasReadyJobs: false, batchesSinceLook: 0))
        #expect(!RuntimeTime.looksAtTimers(hasTimers: true, hasReadyJobs: true, batchesSinceLook: 0))
        #expect(!RuntimeTime.looksAtTimers(hasTimers: true, hasReadyJobs: true, batchesSinceLook: every - 1))
        #expect(RuntimeTime.looksAtTimers(hasTimers: true, hasReadyJobs: true, batchesSinceLook: every))
        #expect(RuntimeTime.looksAtTimers(hasTimers: true, hasReadyJobs: true, batchesSinceLook: every + 1))
    }
}

/// The executor's timers (`DeadlineHeap`): the earliest deadline first, equal deadlines in the
/// order they came, nothing before its deadline.
struct DeadlineHeapTests {
    @Test func anEmptyHeapHasNothingDue() {
        var heap = DeadlineHeap<Int>()
        #expect(heap.isEmpty && heap.first == nil)
        #expect(heap.popDue(now: .max) == nil)
    }

    @Test func nothingComesBeforeItsDeadlineAndEverythingAtIt() {
        var heap = DeadlineHeap<String>()
        heap.push("a", at: 100)
        #expect(heap.popDue(now: 99) == nil)
        #expect(heap.popDue(now: 100) == "a")
        #expect(heap.isEmpty)
        heap.push("never", at: .max)
        heap.push("first", at: 0)
        #expect(heap.popDue(now: 0) == "first")
        #expect(heap.popDue(now: .max - 1) == nil)
        #expect(heap.popDue(now: .max) == "never")
    }

    @Test func equalDeadlinesComeOutInTheOrderTheyWentIn() {
        var heap = DeadlineHeap<Int>()
        for i in 0..<100 { heap.push(i, at: 7) }
        var out: [Int] = []
        while let i = heap.popDue(now: 7) { out.append(i) }
        #expect(out == Array(0..<100))
    }

    @Test func manyDeadlinesComeOutSortedWithTiesInOrder() {
        var generator = SystemRandomNumberGenerator()
        var heap = DeadlineHeap<Int>(capacity: 16)
        var pushed: [(deadline: UInt64, index: Int)] = []
        for index in 0..<1000 {
            let deadline = UInt64.random(in: 0..<50, using: &generator)
            heap.push(index, at: deadline)
            pushed.append((deadline, index))
        }
        #expect(heap.count == 1000 && heap.first == pushed.map(\.deadline).min())
        var out: [Int] = []
        while let i = heap.popDue(now: .max) { out.append(i) }
        let expected = pushed.sorted { $0.deadline != $1.deadline ? $0.deadline < $1.deadline : $0.index < $1.index }.map(\.index)
        #expect(out == expected)
    }

    /// Only what is due comes out; the rest waits, the earliest first.
    @Test func onlyTheDueArePopped() {
        var heap = DeadlineHeap<UInt64>()
        for d: UInt64 in [50, 10, 40, 20, 30] { heap.push(d, at: d) }
        var out: [UInt64] = []
        while let d = heap.popDue(now: 30) { out.append(d) }
        #expect(out == [10, 20, 30])
        #expect(heap.first == 40 && heap.count == 2)
    }
}
