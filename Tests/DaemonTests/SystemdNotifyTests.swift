import EvcaptureTesting
import Foundation
import Testing
@testable import EvcaptureDaemon
import Camera
import Output
import ConfigFile

@Suite struct SystemdNotifyTests {
    /// A datagram socket standing in for systemd; returns its fd.
    func listener(_ address: [UInt8]) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: address) }
        let len = socklen_t(MemoryLayout<sa_family_t>.size + address.count)
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        try #require(rc == 0, "bind: \(String(cString: strerror(errno)))")
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    func receive(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n < 0 ? nil : String(decoding: buffer[0..<n], as: UTF8.self)
    }

    @Test func readyArrivesOnAPathSocket() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fd = try listener(Array("\(dir)/notify".utf8) + [0])
        defer { close(fd) }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "\(dir)/notify"])
        #expect(try notifier.ready(status: "watching 2 devices"))
        #expect(receive(fd) == "READY=1\nSTATUS=watching 2 devices")
        #expect(try notifier.stopping())
        #expect(receive(fd) == "STOPPING=1")
    }

    @Test func abstractSocketNames() throws {
        let name = "evcapture-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = try listener([0] + Array(name.utf8))
        defer { close(fd) }
        #expect(try SystemdNotifier(socketPath: "@\(name)").notify("READY=1"))
        #expect(receive(fd) == "READY=1")
    }

    @Test func withoutSystemdNothingIsSentAndAMissingSocketIsAnError() throws {
        #expect(try SystemdNotifier(environment: [:]).ready() == false)
        #expect(throws: SystemdNotifier.NotifyError.self) {
            try SystemdNotifier(socketPath: "/nonexistent/evcapture/notify").ready()
        }
    }
}
