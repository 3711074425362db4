#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Vocabulary

/// A Silicon Labs CP2112 (USB-HID to SMBus and 8 GPIOs, 10c4:ea90) emulated on /dev/uhid:
/// the kernel's hid-cp2112 driver binds to it and makes a real gpiochip (`cp2112_gpio`),
/// so the GPIO outputs are tested through the GPIO character device and libgpiod as on
/// hardware. It answers the driver's feature-report requests (UHID_GET_REPORT and
/// UHID_SET_REPORT): the version, the SMBus configuration, the GPIO configuration, and
/// records every GPIO set (report 0x04) with the time it arrived (CLOCK_MONOTONIC).
final class FakeCP2112: Sendable {
    struct Edge: Sendable, Equatable {
        var line: Int
        var value: Bool
        var time: Int64
    }
    private struct State {
        var direction: UInt8 = 0
        var pushPull: UInt8 = 0
        var latch: UInt8 = 0
        var edges: [Edge] = []
    }
    private let fd: Int32
    private let state = Mutex(State())
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)

    // <linux/uhid.h>: event types and the packed struct uhid_event (4 bytes of type, then the union).
    static let create2: UInt32 = 11, destroy: UInt32 = 1, getReport: UInt32 = 9, getReportReply: UInt32 = 10
    static let setReport: UInt32 = 13, setReportReply: UInt32 = 14
    static let eventSize = 4376
    static let busUSB: UInt16 = 0x03

    /// Vendor-defined feature reports with the CP2112's ids (sizes as the driver asks).
    static let descriptor: [UInt8] = {
        var d: [UInt8] = [0x06, 0x00, 0xFF, 0x09, 0x01, 0xA1, 0x01, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08]
        for (id, count) in [(0x02, 4), (0x03, 1), (0x04, 2), (0x05, 2), (0x06, 13), (0x20, 1)] as [(UInt8, UInt8)] {
            d += [0x85, id, 0x09, id, 0x95, count, 0xB1, 0x02]
        }
        return d + [0xC0]
    }()

    init() throws {
        fd = open("/dev/uhid", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError(errno: errno, context: "opening /dev/uhid") }
        var ev = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.create2, at: 0, in: &ev)
        for (i, b) in "CP2112 HID USB-to-SMBus Bridge".utf8.enumerated() { ev[4 + i] = b }
        let rd = Self.descriptor
        Self.put16(UInt16(rd.count), at: 260, in: &ev)
        Self.put16(Self.busUSB, at: 262, in: &ev)
        Self.put(0x10c4, at: 264, in: &ev)
        Self.put(0xea90, at: 268, in: &ev)
        for (i, b) in rd.enumerated() { ev[280 + i] = b }
        let written = ev.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == ev.count else {
            let e = errno
            close(fd)
            throw SystemError(errno: e, context: "UHID_CREATE2 (a CP2112)")
        }
        let this = Unmanaged.passUnretained(self)
        Thread { this.takeUnretainedValue().serve() }.start()
    }

    deinit { stop() }

    /// Destroys the device (the gpiochip goes) and ends the thread.
    func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        var ev = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.destroy, at: 0, in: &ev)
        _ = ev.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        done.wait()
        close(fd)
    }

    var edges: [Edge] { state.withLock { $0.edges } }
    func clearEdges() { state.withLock { $0.edges.removeAll() } }

    /// `/dev/gpiochipN` of the emulated CP2112, once the driver made it: the gpiochip whose
    /// device sits under the HID device 0003:10C4:EA90.
    static func chipNode() -> String? {
        let base = "/sys/bus/gpio/devices"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base))?.sorted() ?? [] where name.hasPrefix("gpiochip") {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(base)/\(name)")) ?? ""
            if target.uppercased().contains("10C4:EA90") { return "/dev/\(name)" }
        }
        return nil
    }

    private func serve() {
        var ev = [UInt8](repeating: 0, count: Self.eventSize)
        while running.load(ordering: .relaxed) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) == 1 else { continue }
            let n = ev.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n >= 4 else { continue }
            let type = Self.get32(ev, 0)
            if type == Self.getReport {
                let id = Self.get32(ev, 4)
                let rnum = ev[8]
                reply(get: id, data: answer(rnum))
            } else if type == Self.setReport {
                let id = Self.get32(ev, 4)
                let size = Int(Self.get16(ev, 10))
                let data = Array(ev[12..<(12 + min(size, 64))])
                took(data, at: monotonicMicroseconds())
                var r = [UInt8](repeating: 0, count: Self.eventSize)
                Self.put(Self.setReportReply, at: 0, in: &r)
                Self.put(id, at: 4, in: &r)
                _ = r.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
        }
        done.signal()
    }

    private func answer(_ rnum: UInt8) -> [UInt8] {
        state.withLock { s in
            switch rnum {
            case 0x05: [0x05, 0x0C, 0x02]  // part number, version
            case 0x06: [0x06, 0x00, 0x01, 0x86, 0xA0, 0x02, 0x00, 0x00, 0x64, 0x00, 0x64, 0x01, 0x00, 0x0F]  // SMBus config
            case 0x02: [0x02, s.direction, s.pushPull, 0x00, 0x00]  // GPIO config
            case 0x03: [0x03, s.latch]
            case 0x20: [0x20, 0xFF]
            default: [rnum]
            }
        }
    }

    private func took(_ data: [UInt8], at time: Int64) {
        guard let id = data.first else { return }
        state.withLock { s in
            switch id {
            case 0x02 where data.count >= 3:
                s.direction = data[1]
                s.pushPull = data[2]
            case 0x04 where data.count >= 3:
                let (value, mask) = (data[1], data[2])
                for line in 0..<8 where mask & (1 << line) != 0 {
                    let on = value & (1 << line) != 0
                    s.latch = (s.latch & ~(1 << line)) | (on ? 1 << line : 0)
                    s.edges.append(Edge(line: line, value: on, time: time))
                }
            default: break
            }
        }
    }

    private func reply(get id: UInt32, data: [UInt8]) {
        var r = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.getReportReply, at: 0, in: &r)
        Self.put(id, at: 4, in: &r)
        Self.put16(0, at: 8, in: &r)  // err
        Self.put16(UInt16(data.count), at: 10, in: &r)
        for (i, b) in data.enumerated() { r[12 + i] = b }
        _ = r.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    static func put(_ v: UInt32, at o: Int, in b: inout [UInt8]) { for i in 0..<4 { b[o + i] = UInt8((v >> (8 * UInt32(i))) & 0xff) } }
    static func put16(_ v: UInt16, at o: Int, in b: inout [UInt8]) { b[o] = UInt8(v & 0xff); b[o + 1] = UInt8(v >> 8) }
    static func get32(_ b: [UInt8], _ o: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[o + $1]) << (8 * UInt32($1)) } }
    static func get16(_ b: [UInt8], _ o: Int) -> UInt16 { UInt16(b[o]) | UInt16(b[o + 1]) << 8 }
}
