import EvcaptureTesting
import Foundation
import Synchronization
import Testing

/// The tests' one synchronous poll, `pollUntil` (docs/testing.md), at both ends of its wait,
/// and a helper built on it.
struct PollUntilTests {
    @Test func aConditionThatHoldsIsTrueAtTheFirstLook() {
        var looks = 0
        #expect(
            pollUntil(timeout: .seconds(30)) {
                looks += 1
                return true
            })
        #expect(looks == 1)
    }

    /// A zero timeout still looks once.
    @Test func aZeroTimeoutLooksOnce() {
        var looks = 0
        #expect(
            !pollUntil(timeout: .zero) {
                looks += 1
                return false
            })
        #expect(looks == 1)
    }

    @Test func aConditionThatNeverHoldsIsFalseOnceTheTimeoutPassed() {
        var looks = 0
        let start = ContinuousClock.now
        #expect(
            !pollUntil(timeout: .milliseconds(100), every: .milliseconds(20)) {
                looks += 1
                return false
            })
        #expect(ContinuousClock.now - start >= .milliseconds(100))
        #expect(looks >= 2)
    }

    /// The look after the last pause counts, even once the deadline has passed: a result that
    /// came during that pause is not missed.
    @Test func theLastLookIsAfterTheDeadline() {
        let deadline = ContinuousClock.now + .milliseconds(60)
        #expect(pollUntil(timeout: .milliseconds(60), every: .milliseconds(20)) { ContinuousClock.now >= deadline })
    }

    @Test func aResultOfAnotherThreadIsSeen() {
        let done = Atomic<Bool>(false)
        Thread.detachNewThread {
            usleep(50_000)
            done.store(true, ordering: .releasing)
        }
        #expect(pollUntil(timeout: .seconds(30)) { done.load(ordering: .acquiring) })
    }

    struct Refused: Error {}

    @Test func anErrorOfTheConditionEndsTheWait() {
        #expect(throws: Refused.self) { try pollUntil(timeout: .seconds(30)) { throw Refused() } }
    }
}

/// `MosquittoBroker.Subscription.waitFor`, which polls through `pollUntil`: a message that
/// came is found, one that never comes is nil once its timeout passed.
@Suite(
    .enabled(if: MosquittoBroker.skipReason == nil, "needs mosquitto and mosquitto-clients (apt-get install mosquitto mosquitto-clients)"))
struct MosquittoSubscriptionTests {
    @Test func waitForFindsAMessageAndGivesUpAfterItsTimeout() throws {
        let broker = try MosquittoBroker(directory: try temporaryDirectory())
        try broker.start()
        defer { broker.stop() }
        let watch = try broker.subscribe("t/#")
        try broker.publish("t/a", "one")
        #expect(watch.waitFor { topic, payload in topic == "t/a" && payload == "one" }?.payload == "one", "\(watch.messages)")
        let start = ContinuousClock.now
        #expect(watch.waitFor(timeout: .milliseconds(300)) { topic, _ in topic == "t/never" } == nil)
        #expect(ContinuousClock.now - start >= .milliseconds(300))
    }
}
