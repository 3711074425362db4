// End-to-end latency on a real kernel, through evcapture's own input path:
//
//   keys  uinput write (CLOCK_MONOTONIC) → evdev node → IOLoop thread (epoll + libevdev,
//         EvdevDevice) → the device's AsyncStream → Pipeline (roles → capture core) →
//         CaptureDispatcher → the primary handler, which reads CLOCK_MONOTONIC.
//   knob  uinput write of one REL_DIAL step → the same path to the controls stage
//         (CameraControlsStage → ControlsSession → V4L2Camera.set) → the return of the
//         VIDIOC_S_EXT_CTRLS ioctl on the camera (the fake UVC camera in the test VM).
//
// The writer (main thread) and the measured side talk through a POSIX semaphore, as in
// the C floor (Tests/System/bench/evdev-floor.c), so the two differ only by what lies
// between the evdev read and the handler. Not a test: it prints figures; run it in the
// test VM with Tests/System/bench/run (BENCHMARKS.md).
import Camera
import Output
import Capture
import Runtime
import Evdev
import Vocabulary
import LinuxIO
import Logging
import Synchronization
import V4L2

#if canImport(Glibc)
import Glibc
#endif

@inline(__always) func nowNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// A POSIX semaphore plus the time its poster saw (the writer waits on it).
final class Signal: Sendable {
    // sem_t lives at a fixed heap address for the object's life; sem_post/sem_wait are
    // thread-safe by definition, which is why the raw pointer may be shared.
    private nonisolated(unsafe) let sem = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    private let seenAt = Atomic<Int64>(0)
    init() { sem_init(sem, 0, 0) }
    deinit {
        sem_destroy(sem)
        sem.deallocate()
    }
    func post(at time: Int64) {
        seenAt.store(time, ordering: .releasing)
        sem_post(sem)
    }
    /// The poster's time, or nil after `seconds` without a post.
    func wait(seconds: Int = 5) -> Int64? {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += seconds
        while sem_timedwait(sem, &deadline) != 0 {
            if errno == EINTR { continue }
            return nil
        }
        return seenAt.load(ordering: .acquiring)
    }
}

func report(_ what: String, _ samples: [Int64]) {
    let v = samples.sorted()
    let n = v.count
    func p(_ q: Double) -> String { us(v[Int(Double(n - 1) * q)]) }
    let mean = Double(v.reduce(0, +)) / Double(n) / 1000
    print("\(what): n=\(n) p50=\(p(0.5))us p90=\(p(0.9))us p99=\(p(0.99))us p99.9=\(p(0.999))us max=\(us(v[n - 1]))us mean=\(fmt(mean))us")
}

func us(_ ns: Int64) -> String { fmt(Double(ns) / 1000) }
func fmt(_ v: Double) -> String {
    let r = (v * 10).rounded() / 10
    return String(r)
}

func fail(_ message: String) -> Never {
    print("latency-benchmark: \(message)")
    exit(1)
}

/// When the pipeline last received a frame (CLOCK_MONOTONIC ns): splits the latency into
/// write → pipeline and pipeline → handler.
let frameReceivedAt = Atomic<Int64>(0)

/// The pipeline on the I/O thread, as in the daemon (`DaemonState`): an actor whose
/// executor is the `IOLoop`, entered synchronously from the device's read handler.
actor PipelineOnLoop {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    var pipeline: Pipeline
    var index = 0
    let emit: @Sendable (PipelineEvent) -> Void

    init(loop: IOLoop, pipeline: sending Pipeline, emit: @escaping @Sendable (PipelineEvent) -> Void) {
        unownedExecutor = loop.asUnownedSerialExecutor()
        self.pipeline = pipeline
        self.emit = emit
    }

    func add(_ device: EvdevDevice) {
        let profile = RoleClassifier.profile(for: device.description, node: device.node)
        let now = monotonicNow()
        index = pipeline.addDevice(profile, at: now) { emit($0) }
        pipeline.sessionStarted(at: now) { emit($0) }
    }

    func handle(_ input: DeviceInput) {
        guard case .frame(let frame) = input else { return }
        frameReceivedAt.store(nowNanoseconds(), ordering: .relaxed)
        pipeline.handle(frame, device: index, now: monotonicNow()) { emit($0) }
    }
}

/// Reads `device` on `loop` and feeds every frame through `pipeline` on the I/O thread, as
/// the daemon does; `emit` sees each output there.
func startReading(
    _ device: EvdevDevice, loop: IOLoop, pipeline: sending Pipeline, emit: @escaping @Sendable (PipelineEvent) -> Void
) async throws {
    let state = PipelineOnLoop(loop: loop, pipeline: pipeline, emit: emit)
    await state.add(device)
    try device.read(on: loop) { input in state.assumeIsolated { $0.handle(input) } }
}

// MARK: - keys

func keys(presses: Int, gapMicroseconds: UInt32) async throws {
    let loop = try IOLoop()
    let uinput = try UinputDevice(
        DeviceDescription(name: "evcapture latency bench", bus: .host, vendor: 1, product: 1, codes: [.synReport, .volumeDown]),
        autorepeat: false)
    let device = try EvdevDevice.open(uinput.node)
    let signal = Signal()
    let received = Atomic<Int64>(0)
    let dispatcher = CaptureDispatcher(
        interaction: CaptureEventInteraction(primary: { event in
            let t = nowNanoseconds()
            received.store(frameReceivedAt.load(ordering: .relaxed), ordering: .relaxed)
            if event.phase == .began || event.phase == .ended { signal.post(at: t) }
        }))
    // Where the handler runs: on its own thread through CaptureDispatcher (the library's
    // guarantee: a handler never blocks input), or — the daemon's path — the pipeline's
    // output on the I/O thread itself (the daemon hands it to its action workers and
    // line writer from there).
    let inline = getenv("EVC_BENCH_INLINE") != nil
    try await startReading(
        device, loop: loop, pipeline: Pipeline(settings: CaptureCoreSettings(hasSecondaryHandler: false)),
        emit: { output in
            guard case .capture(let e) = output else { return }
            if inline {
                let t = nowNanoseconds()
                received.store(frameReceivedAt.load(ordering: .relaxed), ordering: .relaxed)
                if e.phase == .began || e.phase == .ended { signal.post(at: t) }
            } else {
                dispatcher.deliver(e)
            }
        })

    var down: [Int64] = [], up: [Int64] = [], toTask: [Int64] = [], toHandler: [Int64] = []
    down.reserveCapacity(presses)
    up.reserveCapacity(presses)
    let warmup = presses / 20 + 10
    for i in -warmup..<presses {
        var t0 = nowNanoseconds()
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeDown, 1)])
        guard let seenDown = signal.wait() else { fail("press \(i): the handler never saw began") }
        if i >= 0 {
            down.append(seenDown - t0)
            let r = received.load(ordering: .relaxed)
            toTask.append(r - t0)
            toHandler.append(seenDown - r)
        }
        usleep(gapMicroseconds)
        t0 = nowNanoseconds()
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .volumeDown, 0)])
        guard let seenUp = signal.wait() else { fail("press \(i): the handler never saw ended") }
        if i >= 0 { up.append(seenUp - t0) }
        usleep(gapMicroseconds)
    }
    print(
        inline
            ? "evcapture (EvdevDevice + IOLoop + Pipeline → output on the I/O thread, the daemon's path), \(presses) presses, \(gapMicroseconds) us apart"
            : "evcapture (EvdevDevice + IOLoop + Pipeline + CaptureDispatcher → handler), \(presses) presses, \(gapMicroseconds) us apart")
    report("evcapture press", down)
    report("evcapture release", up)
    report("  press: write → pipeline", toTask)
    report("  press: pipeline → handler", toHandler)
    device.close()
    uinput.destroy()
    loop.stop()
}

// MARK: - knob

/// The camera the controls drive, timing each set: the poster's time is the return of the
/// V4L2 ioctl.
final class TimedCamera: CameraBackend {
    let camera: any CameraBackend
    let signal: Signal
    init(_ camera: any CameraBackend, signal: Signal) {
        self.camera = camera
        self.signal = signal
    }
    var identity: String { camera.identity }
    func controls() throws(CameraError) -> [CameraControlInfo] { try camera.controls() }
    func value(of id: CameraControlID) throws(CameraError) -> Int64 { try camera.value(of: id) }
    func cachedControl(_ id: CameraControlID) throws(CameraError) -> CameraControlInfo? { try camera.cachedControl(id) }
    /// When the last `set` was entered: the V4L2 ioctls (a `VIDIOC_QUERY_EXT_CTRL` from
    /// uvcvideo's cache, then `VIDIOC_S_EXT_CTRLS`) are issued from here on.
    let enteredAt = Atomic<Int64>(0)
    func set(_ id: CameraControlID, to value: Int64) throws(CameraError) -> Int64 {
        enteredAt.store(nowNanoseconds(), ordering: .relaxed)
        defer { signal.post(at: nowNanoseconds()) }
        return try camera.set(id, to: value)
    }
}

let verbose = getenv("EVC_BENCH_VERBOSE") != nil

func knob(steps: Int, gapMicroseconds: UInt32, cameraPath: String) async throws {
    let loop = try IOLoop()
    let session = try CameraSession(.init(camera: .path(cameraPath)), loop: loop, logger: Logger(label: "bench"))
    let signal = Signal()
    let timed = TimedCamera(session.camera, signal: signal)
    let stage = CameraControlsStage(camera: timed, configuration: ControlsConfiguration(), controls: ["zoom"])
    guard stage.session.controls.contains(where: { $0.name == "zoom" }) else { fail("\(cameraPath) has no zoom control") }
    let uinput = try UinputDevice(
        DeviceDescription(name: "evcapture knob bench", bus: .usb, vendor: 0x1209, product: 0x0d1a, codes: [.synReport, .relDial, .btn0]))
    let device = try EvdevDevice.open(uinput.node)
    let errors = Atomic<Int>(0)
    let recent = Mutex<[String]>([])
    try await startReading(
        device, loop: loop, pipeline: Pipeline(settings: CaptureCoreSettings(), controls: stage),
        emit: { output in
            if case .capture = output { return }
            let json = output.json
            if verbose { print(json) }
            recent.withLock { r in
                if r.count == 20 { r.removeFirst() }
                r.append(json)
            }
            if json.contains("\"error\"") { errors.add(1, ordering: .relaxed) }
        })
    // the camera driver may still be settling right after it appeared
    usleep(500_000)

    var samples: [Int64] = [], issued: [Int64] = [], read: [Int64] = []
    samples.reserveCapacity(steps)
    issued.reserveCapacity(steps)
    let warmup = steps / 20 + 5
    for i in -warmup..<steps {
        let t0 = nowNanoseconds()
        try uinput.writeFrame([InputEvent(time: Timestamp(microseconds: 0), .relDial, i % 2 == 0 ? 1 : -1)])
        guard let seen = signal.wait() else {
            // GadgetFS can lose a control request right after the camera appeared (see
            // Tests/System/README.md); uvcvideo then waits out its timeout: not our figure
            if i < 0 { print("knob: warm-up step \(i) got no set within 5 s (lost USB request?)"); continue }
            fail("step \(i): no control was set within 5 s; last lines:\n" + recent.withLock { $0.joined(separator: "\n") })
        }
        if i >= 0 {
            samples.append(seen - t0)
            issued.append(timed.enteredAt.load(ordering: .relaxed) - t0)
            read.append(frameReceivedAt.load(ordering: .relaxed) - t0)
        }
        usleep(gapMicroseconds)
    }
    print(
        "evcapture knob step → VIDIOC_S_EXT_CTRLS returned (\(cameraPath), zoom_absolute), \(steps) steps, \(gapMicroseconds) us apart, \(errors.load(ordering: .relaxed)) error lines"
    )
    report("knob step → set entered (ioctls issued)", issued)
    report("  of it: write → pipeline", read)
    report("  of it: pipeline → set entered", zip(issued, read).map { $0 - $1 })
    report("knob step → S_EXT_CTRLS returned", samples)

    // The ioctls alone, for comparison (the floor under the knob figure): what one
    // V4L2Camera.set costs (S_EXT_CTRLS, then G_EXT_CTRLS reading the value back), and a
    // G_EXT_CTRLS alone, on a second open of the same node.
    let direct = try V4L2Device(path: cameraPath)
    let zoom = try direct.describe(ControlID(CameraControlID.zoomAbsolute.rawValue))
    var sets: [Int64] = [], gets: [Int64] = []
    for i in 0..<min(steps, 500) {
        let t0 = nowNanoseconds()
        _ = try direct.set(zoom, to: i % 2 == 0 ? 120 : 100)
        let t1 = nowNanoseconds()
        _ = try direct.value(of: zoom)
        let t2 = nowNanoseconds()
        sets.append(t1 - t0)
        gets.append(t2 - t1)
        usleep(gapMicroseconds)
    }
    report("V4L2Device.set (S_EXT_CTRLS + G_EXT_CTRLS read-back)", sets)
    report("G_EXT_CTRLS alone", gets)
    device.close()
    uinput.destroy()
    loop.stop()
}

// MARK: - main

@main
enum LatencyBenchmark {
    static func main() async {
        let args = Array(CommandLine.arguments.dropFirst())
        do {
            switch args.first {
            case "keys":
                try await keys(
                    presses: args.count > 1 ? Int(args[1]) ?? 10_000 : 10_000,
                    gapMicroseconds: args.count > 2 ? UInt32(args[2]) ?? 200 : 200)
            case "knob" where args.count > 1:
                try await knob(
                    steps: args.count > 2 ? Int(args[2]) ?? 1000 : 1000, gapMicroseconds: args.count > 3 ? UInt32(args[3]) ?? 2000 : 2000,
                    cameraPath: args[1])
            default:
                print("usage: latency-benchmark keys [PRESSES [GAP_US]] | knob /dev/videoN [STEPS [GAP_US]]")
                exit(2)
            }
        } catch {
            fail("\(error)")
        }
    }
}
