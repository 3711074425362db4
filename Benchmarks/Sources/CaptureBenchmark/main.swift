// Throughput and allocations of the capture hot path: key frames through roles → press
// lifecycle → gestures (the core) → dispatcher with no-op handlers. Not a test: run it in
// release mode and read the figures (BENCHMARKS.md records them).
import Camera
import Capture
import Runtime
import Vocabulary
import Foundation
import MallocCounter

#if canImport(Glibc)
import Glibc
#endif

/// Devices with the roles the classifier gives them.
func devices() -> [DeviceProfile] {
    let gpio = DeviceDescription(
        name: "gpio-keys", bus: .host, vendor: 1, product: 1, version: 0x100,
        codes: [.synReport, .volumeDown, .volumeUp, .power])
    let headset = DeviceDescription(
        name: "Bench Headset (AVRCP)", bus: .bluetooth, codes: [.synReport, .playCD, .pauseCD, .nextSong, .volumeUp])
    return [
        DeviceProfile(
            description: gpio, node: "/dev/input/event0",
            roles: [
                .volumeDown: RoleAssignment(role: .primary, source: .default, reason: "volume key"),
                .volumeUp: RoleAssignment(role: .secondary, source: .default, reason: "volume key"),
            ]),
        DeviceProfile(
            description: headset, node: "/dev/input/event1",
            roles: [.playCD: RoleAssignment(role: .primary, source: .default, reason: "AVRCP")], isHeadset: true),
    ]
}

/// The workload, one frame per millisecond: clicks on both volume keys (one with two
/// autorepeat frames), headset clicks, and every 64 cycles a 700 ms long press.
struct Workload {
    var cycle = 0
    var step = 0
    var now = Timestamp(microseconds: 0)
    // (device index, code, value); a value of -1 means "let time pass".
    static let script: [(Int, EventCode, Int32)] = [
        (0, .volumeDown, 1), (0, .volumeDown, 0),
        (0, .volumeUp, 1), (0, .volumeUp, 2), (0, .volumeUp, 2), (0, .volumeUp, 0),
        (1, .playCD, 1), (1, .playCD, 0),
    ]

    /// Fills `frame` in place with the next frame; returns its device index.
    mutating func next(into frame: inout [InputEvent]) -> Int {
        now = Timestamp(microseconds: now.microseconds + 1000)
        var (dev, code, value) = Self.script[step]
        if cycle % 64 == 63 && step == 0 && value == 1 {
            // Hold this press: its release comes 700 ms later.
            (dev, code, value) = (0, .volumeDown, 1)
        }
        if cycle % 64 == 63 && step == 1 { now = Timestamp(microseconds: now.microseconds + 700_000) }
        frame[0] = InputEvent(time: now, code, value)
        frame[1] = InputEvent(time: now, .synReport, 0)
        step += 1
        if step == Self.script.count {
            step = 0
            cycle += 1
        }
        return dev
    }
}

struct Result {
    var frames: Int
    var seconds: Double
    var allocations: UInt64
    var events: Int
    var line: String {
        let rate = Double(frames) / seconds
        let perFrame = Double(allocations) / Double(frames)
        return "\(frames) frames in \(fmt(seconds, 3)) s: \(fmt(rate / 1e6, 2)) M frames/s, "
            + "\(fmt(1e9 * seconds / Double(frames), 1)) ns/frame, \(events) capture events, "
            + "\(allocations) heap allocations (\(fmt(perFrame, 6)) per frame)"
    }
}

func fmt(_ v: Double, _ digits: Int) -> String {
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (v * p).rounded() / p
    var s = String(r)
    if let dot = s.firstIndex(of: ".") {
        let decimals = s.distance(from: dot, to: s.endIndex) - 1
        if decimals < digits { s += String(repeating: "0", count: digits - decimals) }
    }
    return s
}

/// Runs `frames` frames through the core and, if given, the dispatcher.
func run(frames: Int, warmup: Int, dispatcher: CaptureDispatcher?) -> Result {
    var core = CaptureCore(settings: CaptureCoreSettings(hasSecondaryHandler: dispatcher?.interaction.hasSecondaryHandler ?? true))
    let ids = devices().map { core.addDevice($0) }
    var out: [CaptureEvent] = []
    out.reserveCapacity(64)
    core.sessionStarted(now: Timestamp(microseconds: 0), into: &out)
    var frame = [InputEvent](repeating: InputEvent(time: Timestamp(microseconds: 0), .synReport, 0), count: 2)
    var work = Workload()
    var events = 0

    @inline(__always) func one() {
        let dev = work.next(into: &frame)
        out.removeAll(keepingCapacity: true)
        if let d = core.nextDeadline, d <= work.now { core.advance(to: d, into: &out) }
        core.handle(frame: frame, device: ids[dev], now: work.now, into: &out)
        events &+= out.count
        dispatcher?.deliver(out)
    }

    for _ in 0..<warmup { one() }
    events = 0
    let clock = ContinuousClock()
    let a0 = evc_malloc_count()
    let t0 = clock.now
    for _ in 0..<frames { one() }
    let t1 = clock.now
    let a1 = evc_malloc_count()
    let (s, atto) = (t1 - t0).components
    return Result(frames: frames, seconds: Double(s) + Double(atto) / 1e18, allocations: a1 - a0, events: events)
}

/// The knob path without the kernel: dial steps (`REL_DIAL` ±1 + `SYN_REPORT`, 2 ms apart)
/// through `Pipeline` (roles → core → controls stage → the zoom slider) to a simulated
/// camera's `set`, as the daemon runs it on its I/O thread. Outputs (value lines) are
/// built, as in the daemon, and dropped.
func knobSteps(_ steps: Int) -> Result {
    let dial = DeviceDescription(
        name: "Griffin PowerMate", bus: .usb, vendor: 0x077d, product: 0x0410, codes: [.synReport, .relDial, .btn0])
    let camera = EnteredCamera(SimCamera())
    var pipeline = Pipeline(
        settings: CaptureCoreSettings(),
        controls: CameraControlsStage(camera: camera, configuration: ControlsConfiguration(), controls: ["zoom"]))
    var lines = 0
    let index = pipeline.addDevice(RoleClassifier.profile(for: dial, node: "/dev/input/event9"), at: Timestamp(microseconds: 0)) { _ in }
    pipeline.sessionStarted(at: Timestamp(microseconds: 0)) { _ in }
    var frame = [InputEvent(time: Timestamp(microseconds: 0), .relDial, 1)]
    var now = Timestamp(microseconds: 0)
    func one(_ i: Int) {
        now = Timestamp(microseconds: now.microseconds + 2000)
        frame[0] = InputEvent(time: now, .relDial, i & 1 == 0 ? 1 : -1)
        pipeline.handle(frame: frame, device: index, at: now) { _ in lines &+= 1 }
    }
    for i in 0..<2000 { one(i) }
    // time from Pipeline.handle to the camera's set, per step (the part before the ioctl)
    var toSet: [Int64] = []
    toSet.reserveCapacity(20000)
    for i in 0..<20000 {
        let t = nanoseconds()
        one(i)
        toSet.append(camera.enteredAt - t)
    }
    toSet.sort()
    print(
        "knob step: Pipeline.handle → camera set entered: p50 \(toSet[toSet.count / 2]) ns, p99 \(toSet[toSet.count * 99 / 100]) ns (20,000 steps)"
    )
    let before = camera.sim.setLog.count
    let clock = ContinuousClock()
    let a0 = evc_malloc_count()
    let t0 = clock.now
    for i in 0..<steps { one(i) }
    let t1 = clock.now
    let a1 = evc_malloc_count()
    let sets = camera.sim.setLog.count - before
    let (s, atto) = (t1 - t0).components
    return Result(frames: steps, seconds: Double(s) + Double(atto) / 1e18, allocations: a1 - a0, events: sets)
}

func nanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// A simulated camera that notes when `set` is entered.
final class EnteredCamera: CameraBackend, @unchecked Sendable {
    let sim: SimCamera
    var enteredAt: Int64 = 0
    init(_ sim: SimCamera) { self.sim = sim }
    var identity: String { sim.identity }
    func controls() throws(CameraError) -> [CameraControlInfo] { try sim.controls() }
    func value(of id: CameraControlID) throws(CameraError) -> Int64 { try sim.value(of: id) }
    func cachedControl(_ id: CameraControlID) throws(CameraError) -> CameraControlInfo? { try sim.cachedControl(id) }
    func set(_ id: CameraControlID, to value: Int64) throws(CameraError) -> Int64 {
        enteredAt = nanoseconds()
        return try sim.set(id, to: value)
    }
}

@main
enum CaptureBenchmark {
    static func main() async {
        let args = CommandLine.arguments
        let frames = args.count > 1 ? Int(args[1]) ?? 5_000_000 : 5_000_000
        print("capture hot path, \(frames) key frames (EV_KEY + SYN_REPORT), 1 ms apart on the frame clock")

        let core = run(frames: frames, warmup: 200_000, dispatcher: nil)
        print("core only (roles → lifecycle → gestures):        \(core.line)")

        let dispatcher = CaptureDispatcher(
            interaction: CaptureEventInteraction(primary: { _ in }, secondary: { _ in }))
        let full = run(frames: frames, warmup: 200_000, dispatcher: dispatcher)
        let clock = ContinuousClock()
        let t0 = clock.now
        await dispatcher.finish()
        let (s, atto) = (clock.now - t0).components
        print("core → dispatcher (no-op handlers):              \(full.line)")
        print("  handlers drained the remaining queue in \(fmt(Double(s) + Double(atto) / 1e18, 3)) s after the last frame")

        let knob = knobSteps(frames / 20)
        print(
            "knob steps → zoom set (Pipeline + controls, SimCamera): \(knob.line.replacingOccurrences(of: "capture events", with: "camera sets"))"
        )
    }
}
