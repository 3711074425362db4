import Foundation
import LibcameraCamera
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// libcamera's own UVC pipeline handler on the fake UVC camera behind the kernel's real
/// uvcvideo driver, through the C bridge (docs/libcamera.md). The fake camera does not
/// stream (Tests/System/fakeuvc/fakeuvc.c describes one format only so that uvcvideo
/// binds), so what is checked is enumeration, controls, configuration, a start and a clean
/// stop, release, and hot-unplug — once libcamera lists the camera (see
/// ``unlistedOnDummyHCD``); until then, that the camera manager starts on the real kernel.
@Suite(.needsFakeCamera, .serialized, .timeLimit(.minutes(2)))
struct LibcameraSystemTests {
    let camera: FakeCamera

    init() throws {
        camera = try FakeCamera()
        try camera.start()
    }

    /// What Debian's libcamera 0.0.3 does with the fake camera: its UVC pipeline handler
    /// names a camera after the USB controller's firmware node (ACPI or device tree), and
    /// dummy_hcd, the fake camera's virtual controller, has none — it logs "Can not find
    /// controller ID" and registers no camera. When a libcamera lists the camera, this known
    /// issue fails the test (remove it then) and the checks after it run.
    static let unlistedOnDummyHCD: Comment =
        "libcamera 0.0.3's UVC pipeline handler registers no camera on dummy_hcd (no firmware node: \"Can not find controller ID\")"

    /// The fake camera as libcamera lists it, nil (recorded as the known issue) when it does not.
    func listedFakeCamera(in lc: Libcamera) -> LibcameraCameraInfo? {
        let found = fakeCamera(in: lc)
        withKnownIssue(Self.unlistedOnDummyHCD) {
            #expect(found != nil, "libcamera lists \(lc.cameras())")
        }
        return found
    }

    /// libcamera enumerates a camera a moment after the kernel's media device appears.
    func fakeCamera(in lc: Libcamera, present: Bool = true) -> LibcameraCameraInfo? {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let found = lc.cameras().first { $0.id.hasSuffix("\(FakeCamera.usbVendor):\(FakeCamera.usbProduct)") }
            if (found != nil) == present || ContinuousClock.now > deadline { return found }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    @Test func theUVCPipelineHandlerListsTheFakeCameraWithItsModelAndControls() throws {
        let lc = try Libcamera.start().get()
        #expect(lc.version.contains(Libcamera.compiledVersion), "running \(lc.version)")
        guard let info = listedFakeCamera(in: lc) else { return }
        #expect(info.model.hasPrefix(FakeCamera.cardName), "model \(info.model)")
        #expect(info.isUVC)
        #expect(info.location == 2)  // External
        let controls = try lc.controls(of: info.id)
        let names = Set(controls.map(\.name))
        // uvcvideo's brightness and exposure time, as libcamera names them.
        #expect(names.contains("Brightness"), "\(names.sorted())")
        #expect(names.contains("ExposureTime"), "\(names.sorted())")
        let formats = try lc.formats(of: info.id)
        #expect(formats.contains(LibcameraFormat(fourcc: fourcc("YUYV"), width: 160, height: 120)), "\(formats)")
        let properties = try lc.properties(of: info.id)
        #expect(properties.contains { $0.hasPrefix("Model = ") }, "\(properties)")

        // The readable report `evcapture controls` prints.
        let text = LibcameraReport.text(.success(lc))
        #expect(text.contains(info.id) && text.contains("UVC"), "\(text)")
    }

    @Test func aStreamIsConfiguredStartedStoppedAndReleased() throws {
        let lc = try Libcamera.start().get()
        guard let info = listedFakeCamera(in: lc) else { return }
        let delivered = LibcameraFrameCounter()
        do {
            let stream = try LibcameraStream(lc, id: info.id)
            // A second acquisition of the same camera is refused while the first holds it.
            #expect(throws: LibcameraError.self) { _ = try LibcameraStream(lc, id: info.id) }
            #expect(throws: LibcameraError.self) { try stream.configure(format: fourcc("MJPG"), width: 160, height: 120) }
            try stream.configure(format: fourcc("YUYV"), width: 160, height: 120)
            let configuration = try #require(stream.configuration)
            #expect(configuration.width == 160 && configuration.height == 120 && configuration.buffer_count >= 1)
            #expect(throws: LibcameraError.self) { try stream.set(0xdead, integer: 1) }
            let started = clockMonotonicNanoseconds()
            try stream.start { frame in
                delivered.add(frame.sensorTimestamp, after: started)
            }
            Thread.sleep(forTimeInterval: 0.5)
            let before = ContinuousClock.now
            try stream.stop()
            #expect(ContinuousClock.now - before < .seconds(3))
            let afterStop = delivered.count
            Thread.sleep(forTimeInterval: 0.3)
            #expect(delivered.count == afterStop, "a frame after stop()")
            #expect(delivered.badTimestamps == 0, "SensorTimestamp not on CLOCK_MONOTONIC")
        }
        // Released: the camera can be acquired again.
        _ = try LibcameraStream(lc, id: info.id)
    }

    @Test func anUnpluggedCameraLeavesTheList() throws {
        let lc = try Libcamera.start().get()
        #expect(throws: LibcameraError.self) { _ = try LibcameraStream(lc, id: "no such camera") }
        guard listedFakeCamera(in: lc) != nil else { return }
        try camera.stop()
        #expect(fakeCamera(in: lc, present: false) == nil, "still listed: \(lc.cameras())")
    }
}

func clockMonotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Frames counted on libcamera's thread; a SensorTimestamp outside [start, now] on
/// CLOCK_MONOTONIC counts as bad.
final class LibcameraFrameCounter: @unchecked Sendable {
    // @unchecked: every field behind `lock`.
    private let lock = NSLock()
    private var frames = 0
    private var bad = 0
    var count: Int { lock.withLock { frames } }
    var badTimestamps: Int { lock.withLock { bad } }
    func add(_ timestamp: Int64, after start: Int64) {
        let now = clockMonotonicNanoseconds()
        lock.withLock {
            frames += 1
            if timestamp < start - 1_000_000_000 || timestamp > now { bad += 1 }
        }
    }
}
