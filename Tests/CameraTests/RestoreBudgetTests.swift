import EvcaptureTesting
import Vocabulary
import Testing
import V4L2
@testable import Camera

@Suite struct RestoreBudgetTests {
    let zoom = ControlID(0x009a_090d)
    let exposure = ControlID(0x009a_0902)

    /// Asks `budget` for `id` at each time (ms), in order.
    func answers(_ budget: inout RestoreBudget, _ id: ControlID, _ times: [Int64]) -> [Bool] {
        times.map { budget.allow(id, at: Timestamp(microseconds: $0 * 1000)) }
    }

    @Test func allowsTheLimitWithinTheWindowThenGivesWay() {
        var budget = RestoreBudget(limit: 3, window: .seconds(2))
        // a refusal is not a restore: it does not push the window on
        #expect(
            answers(&budget, zoom, [0, 100, 200, 300, 1_999, 2_000, 2_050, 2_100]) == [true, true, true, false, false, true, false, true])
    }

    @Test func eachControlHasItsOwnBudget() {
        var budget = RestoreBudget(limit: 1, window: .seconds(60))
        #expect(answers(&budget, zoom, [0, 1]) == [true, false])
        #expect(answers(&budget, exposure, [1]) == [true])
    }

    @Test func anOccasionalResetIsAlwaysAnswered() {
        var budget = RestoreBudget(limit: 3, window: .seconds(2))
        #expect(answers(&budget, zoom, (0..<20).map { $0 * 1_000 }) == Array(repeating: true, count: 20))
    }
}
