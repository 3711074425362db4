import CLinuxShims
import EvcaptureTesting
import Foundation
@testable import LinuxIO
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
import Vocabulary
#endif

private func monotonicMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// State that lives on an IOLoop's thread, as the daemon's does.
private actor OnLoop {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    let loop: IOLoop
    var reads: [UInt8] = []
    init(_ loop: IOLoop) {
        self.loop = loop
        unownedExecutor = loop.asUnownedSerialExecutor()
    }
    func onLoopThread() -> Bool { loop.isCurrent }
    func threadName() -> String {
        let fd = open("/proc/thread-self/comm", O_RDONLY)
        defer { close(fd) }
        var name = [UInt8](repeating: 0, count: 32)
        let n = read(fd, &name, name.count)
        return String(decoding: name.prefix(max(0, n)), as: UTF8.self).trimmingCharacters(in: .newlines)
    }
    func got(_ byte: UInt8) { reads.append(byte) }
}

@Suite struct IOLoopTests {
    @Test func anActorWhoseExecutorIsTheLoopRunsOnTheIOThread() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let state = OnLoop(loop)
        #expect(loop.isCurrent == false)
        #expect(await state.onLoopThread())
    }

    /// The input path: a read handler enters the actor synchronously, in its own wake-up
    /// (`assumeIsolated` would trap if the loop did not vouch for its thread).
    @Test func aReadHandlerEntersTheActorWithoutAHop() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let state = OnLoop(loop)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        #expect(fcntl(readEnd, F_SETFL, O_NONBLOCK) == 0)
        defer { close(writeEnd) }
        let handled = Atomic<Int>(0)
        try loop.register(
            fd: readEnd,
            handler: { _ in
                var byte: UInt8 = 0
                while read(readEnd, &byte, 1) == 1 {
                    state.assumeIsolated { $0.got(byte) }
                    handled.add(1, ordering: .releasing)
                }
            }, onRemove: { close(readEnd) })
        for b: UInt8 in [7, 8, 9] {
            var v = b
            #expect(write(writeEnd, &v, 1) == 1)
        }
        #expect(pollUntil { handled.load(ordering: .acquiring) == 3 })
        #expect(await state.reads == [7, 8, 9])
    }

    @Test func aTimerFiresOnceNotBeforeItsDeadline() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let firedAt = Mutex<[Int64]>([])
        let timer = try IOTimer(loop: loop) {
            firedAt.withLock { $0.append(monotonicMicroseconds()) }
        }
        defer { timer.cancel() }
        let deadline = monotonicMicroseconds() + 30_000
        timer.arm(atMonotonicMicroseconds: deadline)
        #expect(pollUntil { !firedAt.withLock { $0.isEmpty } })
        // a second timer well after: the first must not have fired again by then
        let later = try IOTimer(loop: loop) { firedAt.withLock { $0.append(-1) } }
        defer { later.cancel() }
        later.arm(atMonotonicMicroseconds: monotonicMicroseconds() + 50_000)
        #expect(pollUntil { firedAt.withLock { $0.count } >= 2 })
        let times = firedAt.withLock { $0 }
        #expect(times.count == 2)
        #expect(times[0] >= deadline)
        #expect(times.last == -1)
    }

    @Test func reArmingReplacesTheDeadlineAndNilDisarms() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let fired = Mutex<[String]>([])
        let moved = try IOTimer(loop: loop) { fired.withLock { $0.append("moved") } }
        let disarmed = try IOTimer(loop: loop) { fired.withLock { $0.append("disarmed") } }
        let last = try IOTimer(loop: loop) { fired.withLock { $0.append("last") } }
        defer { moved.cancel(); disarmed.cancel(); last.cancel() }
        let now = monotonicMicroseconds()
        // First deadlines a minute away: what is tested is their replacement, which a pause
        // of this thread between the calls must not turn into a firing.
        moved.arm(atMonotonicMicroseconds: now + 60_000_000)
        disarmed.arm(atMonotonicMicroseconds: now + 60_000_000)
        moved.arm(atMonotonicMicroseconds: now + 60_000)
        disarmed.arm(atMonotonicMicroseconds: nil)
        last.arm(atMonotonicMicroseconds: now + 120_000)
        #expect(pollUntil { fired.withLock { $0.contains("last") } })
        // timerfds on one clock, one loop: whatever was due earlier was seen first
        #expect(fired.withLock { $0 } == ["moved", "last"])
    }

    @Test func aDeadlineInThePastFiresAtOnce() async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let fired = Atomic<Int>(0)
        let timer = try IOTimer(loop: loop) { fired.add(1, ordering: .releasing) }
        defer { timer.cancel() }
        timer.arm(atMonotonicMicroseconds: 0)
        #expect(pollUntil { fired.load(ordering: .acquiring) == 1 })
    }

    /// The loop's thread is named after what it serves (docs/architecture.md#threads), as
    /// every thread the program starts; `stop()` waits for it to end.
    @Test func theLoopsThreadHasItsName() async throws {
        let loop = try IOLoop(name: "evc-test-loop")
        #expect(await OnLoop(loop).threadName() == "evc-test-loop")
        loop.stop()
        loop.stop()  // a second stop returns too
    }

    /// `arm` after `cancel()` (the booth clock re-arms from other threads) must not touch the
    /// descriptor number the loop closed: by then it may be another file's. Descriptor numbers
    /// are the process's, and the tests beside this one open files all the time (one took the
    /// freed number first, once, and this test failed for it): the test runs in a process of its
    /// own, this test bundle again running only this test.
    @Test func armingACancelledTimerLeavesTheReusedDescriptorAlone() async throws {
        if ProcessInfo.processInfo.environment["EVCAPTURE_TEST_REUSED_DESCRIPTOR"] != nil {
            try Self.armAfterCancel()
            return
        }
        var env = ProcessInfo.processInfo.environment
        env["EVCAPTURE_TEST_REUSED_DESCRIPTOR"] = "1"
        let child = try runThisTestAlone("armingACancelledTimerLeavesTheReusedDescriptorAlone", environment: env)
        let text = child.stdout + child.stderr
        #expect(child.status == 0, "the child's half:\n\(text)")
        #expect(text.contains("the closed descriptor was reused: "), "the child's half:\n\(text)")
    }

    /// The child's half: the only test in its process, so the number the loop frees is the
    /// lowest free one and the next timerfd gets it.
    static func armAfterCancel() throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let timer = try IOTimer(loop: loop) {}
        let old = timer.fd
        timer.cancel()
        #expect(pollUntil { fcntl(old, F_GETFD) == -1 })
        // The lowest free number is handed out first: open timers until one gets `old`.
        var opened: [Int32] = []
        defer { for fd in opened { close(fd) } }
        while opened.last.map({ $0 < old }) ?? true {
            let fd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC))
            try #require(fd >= 0)
            opened.append(fd)
        }
        try #require(opened.last == old, "another thread took descriptor \(old)")
        print("the closed descriptor was reused: \(old)")
        timer.arm(atMonotonicMicroseconds: monotonicMicroseconds() + 60_000_000)
        var current = itimerspec()
        #expect(timerfd_gettime(old, &current) == 0)
        #expect(current.it_value.tv_sec == 0 && current.it_value.tv_nsec == 0, "the other timer was armed: \(current.it_value)")
    }

    /// An `epoll_wait` that fails (here: its descriptor replaced under it by a pipe's, a bug)
    /// stops the process with a message naming it, instead of ending the loop's thread in
    /// silence and leaving every later job waiting forever.
    @Test func aFailingEpollWaitIsReportedNotSilent() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = try IOLoop()
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            try loop.register(fd: fds[0], handler: { _ in })
            // Not close(): the number, free, could be taken by any file the process opens next
            // (EINVAL then, not EBADF); dup2 puts the pipe there at once, and no epoll_wait
            // takes a pipe (EINVAL, every time).
            _ = dup2(fds[0], loop.epfd)
            // Wakes the loop (its epoll instance lives on while it waits), whose next wait fails.
            _ = write(fds[1], "x", 1)
            // The loop's thread ends the process; however long a loaded machine takes to run
            // it, this one waits (a minute at most: then the loop said nothing, and the
            // process's success fails the test).
            for _ in 0..<6000 { usleep(10_000) }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("the I/O loop's epoll_wait failed: epoll_wait: invalid argument"), "\(stderr)")
    }
}
