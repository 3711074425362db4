import NIOCore
import NIOPosix

/// The turns of the server's event loop: one wait for I/O, the reads and writes it found,
/// then the tasks that were due. A connection answers at most one pipelined request per turn
/// (docs/live-view.md#security): a client that sends many requests in one packet would
/// otherwise have all of them answered in one turn (NIOHTTP1 hands over the next one as
/// each answer ends), while the bytes of everyone else, the owner's too, wait unread.
///
/// NIO tells when a turn ends (``processedTick(info:)``, on the loop's thread); a request
/// held back is answered by a task that runs only once a later turn has begun, so after
/// that turn's I/O.
///
/// `@unchecked Sendable`: `turn` and `waiting` are read and written on the server's loop only
/// (NIO calls `processedTick` there; the connections run there).
final class LoopTurns: NIOEventLoopMetricsDelegate, @unchecked Sendable {
    /// How often a held-back request looks whether its turn has ended. NIO runs, in the same
    /// turn, every task that becomes due while tasks run, so the check may come more than
    /// once; it is cheap, and the loop sleeps in between.
    static let recheck = TimeAmount.microseconds(500)

    /// Turns ended so far.
    private(set) var turn: UInt64 = 0
    /// Requests held back now (for tests).
    private(set) var waiting = 0

    func processedTick(info: NIOEventLoopTickInfo) { endTurn() }

    /// The loop's turn ended (NIO calls it; a test on an embedded loop calls it itself).
    func endTurn() { turn &+= 1 }

    /// Runs `body` on `loop` in a later turn than this one.
    func afterThisTurn(on loop: any EventLoop, _ body: @escaping () -> Void) {
        waiting += 1
        let heldIn = turn
        func check() {
            loop.assumeIsolated().scheduleTask(in: Self.recheck) { [self] in
                guard turn == heldIn else {
                    waiting -= 1
                    return body()
                }
                check()
            }
        }
        check()
    }
}
