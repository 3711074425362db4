#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import LinuxIO
import Movie
import Testing
import Vocabulary

/// The recording thread's scheduling (docs/video.md, "Off the input path"): under
/// `SCHED_IDLE`, and so are the threads libx264 starts for it. Read back from the kernel
/// (/proc/self/task/TID/stat, field 41), not from what the call returned.
@Suite struct EncoderThreadPolicyTests {
    /// The scheduling policy of each thread of this process named `name` (threads inherit
    /// their creator's name): tid → policy (SCHED_OTHER 0, SCHED_IDLE 5).
    static func policies(named name: String) -> [Int: Int] {
        var out: [Int: Int] = [:]
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
                comm.trimmingCharacters(in: .newlines) == name,
                let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // Fields after the name start with field 3 (the state); the policy is field 41.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 38, let t = Int(tid), let policy = Int(fields[38]) { out[t] = policy }
        }
        return out
    }

    /// Runs `body` on a new thread named `name` and waits for it.
    static func onThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) -> T {
        let result = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        startThread(name: name) {
            result.value = body()
            done.signal()
        }
        done.wait()
        return result.value!
    }

    final class ResultBox<T>: @unchecked Sendable { var value: T? }

    @Test func aLoweredThreadRunsUnderSCHEDIDLEAndTheOthersDoNot() {
        #expect(!currentThreadIsIdlePolicy, "the test's own thread is of the normal class")
        let (policy, idle, kernel) = Self.onThread("evc-test-idle") { () -> (ThreadPolicy, Bool, [Int: Int]) in
            let policy = lowerCurrentThreadPriority()
            return (policy, currentThreadIsIdlePolicy, Self.policies(named: "evc-test-idle"))
        }
        #expect(policy == .idle)
        #expect(idle)
        #expect(kernel.count == 1 && kernel.values.allSatisfy { $0 == 5 }, "\(kernel)")
        // The process's other threads keep their policy.
        #expect(!currentThreadIsIdlePolicy)
    }

    /// libx264 starts its threads when the encoder opens, on the recording's thread: they
    /// inherit SCHED_IDLE. (With one CPU x264 starts none; the recording thread is checked
    /// alone.)
    @Test func libx264sThreadsInheritTheRecordingThreadsPolicy() throws {
        let dir = NSTemporaryDirectory() + "movie-policy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let choice = try EncoderChoice.choose(.named("libx264"), hardwareNode: nil, available: ["libx264"]).get()
        let name = "evc-test-x264"
        let seen = Self.onThread(name) { () -> Result<(before: Int, during: [Int: Int]), MovieError> in
            lowerCurrentThreadPriority()
            let before = Self.policies(named: name).count
            let path = dir + "/policy.mp4"
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            defer { close(fd) }
            let format = StreamFormat(width: 640, height: 480, pixelFormat: .yuyv, bytesPerLine: 1280, framesPerSecond: 30)
            do throws(MovieError) {
                let writer = try FragmentedMP4Writer(
                    fd: fd, path: path, format: format, settings: H264Settings(encoder: .named("libx264")), encoder: choice,
                    creationTime: 1_764_000_000)
                try writer.append([UInt8](repeating: 128, count: 640 * 480 * 2), at: 0)
                let during = Self.policies(named: name)
                try writer.finish()
                return .success((before, during))
            } catch {
                return .failure(error)
            }
        }
        let (before, during) = try seen.get()
        #expect(before == 1)
        if ProcessInfo.processInfo.activeProcessorCount > 1 {
            #expect(during.count > 1, "libx264 started no thread on \(ProcessInfo.processInfo.activeProcessorCount) CPUs: \(during)")
        }
        #expect(!during.isEmpty && during.values.allSatisfy { $0 == 5 }, "policy per thread (5: SCHED_IDLE): \(during)")
    }
}
