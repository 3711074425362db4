import EvcaptureTesting
import Foundation
import Synchronization
import Vocabulary
import Testing
@testable import Actions
import V4L2
@testable import Frames
@testable import Recording

/// A ring stand-in: frames at fixed kernel times; `frame(nearest:)` returns the nearest,
/// optionally held until the test opens `gate` (a frame not yet delivered), or fails.
final class FakeRing: NearestFrameSource {
    let frames: [RingFrame]
    /// The times asked for, in order.
    let asked = Mutex<[Int64]>([])
    let failure: StreamingError?
    private let gate: DispatchSemaphore?

    init(times: [Int64], held: Bool = false, failure: StreamingError? = nil) {
        frames = times.enumerated().map { i, t in
            RingFrame(
                frame: VideoFrame(
                    bytes: yuyvImage(width: 64, height: 48, stride: 128, shade: i * 37),
                    format: StreamFormat(width: 64, height: 48, pixelFormat: .yuyv, bytesPerLine: 128),
                    sequence: UInt32(i), timestampMicroseconds: t),
                timestampKind: FrameTimestampKind(isMonotonic: true, isStartOfExposure: false))
        }
        self.failure = failure
        gate = held ? DispatchSemaphore(value: 0) : nil
    }

    func open() { gate?.signal() }

    func frame(nearest time: Timestamp, timeout: Duration) throws(StreamingError) -> RingFrame {
        asked.withLock { $0.append(time.microseconds) }
        gate?.wait()
        if let failure { throw failure }
        return frames.min { abs($0.time.microseconds - time.microseconds) < abs($1.time.microseconds - time.microseconds) }!
    }

    func frameTime(nearest time: Timestamp) -> Timestamp? { nil }

    var askedTimes: [Int64] { asked.withLock { $0 } }
}

/// The photo prepared at `began` (docs/behaviour.md#the-moment-of-the-press): committed by the
/// click, removed by anything else, and the same photo as one taken at the click.
@Suite struct PhotoPreparationTests {
    /// The `began` time of each press sent, as every capture event of a press carries it.
    final class PressStarts: Sendable {
        private let times = Mutex<[PressID: Int64]>([:])
        /// `time` for a `began` (remembered), else the press's `began`, or `time` for a press
        /// whose `began` was not sent.
        func began(_ press: PressID, _ kind: ActionTrigger.Kind, at time: Int64) -> Int64 {
            times.withLock { t in
                if kind == .began { t[press] = time }
                return t[press] ?? time
            }
        }
    }

    static let began: Int64 = 5_000_000
    /// Frames 200 ms apart (5 fps): the press is nearest the frame at 5.05 s (sequence 2).
    static let times: [Int64] = [4_650_000, 4_850_000, 5_050_000, 5_250_000, 5_450_000]

    struct Rig {
        let dir: String
        let ring: FakeRing
        let log = OutcomeLog()
        let runner: ActionRunner

        init(
            ring: FakeRing = FakeRing(times: PhotoPreparationTests.times), moment: CaptureSettings.PhotoMoment = .press,
            mode: StreamMode = .always, queueLimit: Int = 8, directory: String? = nil
        ) throws {
            dir = try temporaryDirectory()
            self.ring = ring
            let settings = CaptureSettings(
                devicePath: "/dev/null", outputDirectory: directory ?? dir, streamMode: mode, photoMoment: moment)
            let log = self.log
            runner = ActionRunner(
                configuration: ActionsConfiguration(
                    capture: settings, bindings: [.primary: ActionBinding(photoOn: .click, videoOnLongPress: false)],
                    sound: .off, queueLimit: queueLimit),
                logger: testLogger, onOutcome: log.add, photoFrames: ring)
        }

        /// When each press went down: the daemon's events carry it (`CaptureEvent.began`).
        let starts = PressStarts()

        func send(_ kind: ActionTrigger.Kind, press: PressID, at time: Int64) {
            var t = trigger(kind, press: press)
            t.shouldPlaySound = false
            t.time = Timestamp(microseconds: time)
            t.pressTime = Timestamp(microseconds: starts.began(press, kind, at: time))
            runner.handle(t)
        }

        /// A click as the daemon reports it: the click, then its `ended`.
        func click(press: PressID, at time: Int64) {
            send(.click, press: press, at: time)
            send(.ended, press: press, at: time)
        }

        func files() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted() }
        var parts: [String] { files().filter { $0.hasSuffix(".part") } }
        var photos: [String] { files().filter { $0.hasSuffix(".jpg") } }
        var saved: [PhotoResult] { log.all.compactMap { if case .photoSaved(let p, _) = $0 { p } else { nil } } }
        func remove() { try? FileManager.default.removeItem(atPath: dir) }
    }

    /// The JPEG after its EXIF segment: the image itself.
    static func image(_ jpeg: [UInt8]) -> [UInt8] {
        guard jpeg.count > 6, jpeg[2] == 0xFF, jpeg[3] == 0xE1 else { return jpeg }
        return Array(jpeg[(4 + (Int(jpeg[4]) << 8 | Int(jpeg[5])))...])
    }

    @Test func aClickCommitsThePhotoPreparedAtItsPressAndItIsTheSamePhoto() async throws {
        let rig = try Rig()
        defer { rig.remove() }
        rig.send(.began, press: 1, at: Self.began)
        // Prepared before the click is decided: the frame asked for at once, a hidden file written.
        #expect(await eventually { rig.parts.count == 1 }, "\(rig.files())")
        #expect(rig.ring.askedTimes == [Self.began])
        #expect(rig.photos.isEmpty && rig.saved.isEmpty, "nothing under a final name before the click")
        rig.click(press: 1, at: Self.began + 100_000)
        #expect(await eventually { rig.saved.count == 1 })
        #expect(await eventually { rig.parts.isEmpty })
        let photo = try #require(rig.saved.first)
        #expect(rig.photos == [URL(fileURLWithPath: photo.path).lastPathComponent])
        #expect(photo.path.hasPrefix(rig.dir + "/evcapture-") && photo.path.hasSuffix("-press1.jpg"))
        #expect(photo.frameTime == Timestamp(microseconds: 5_050_000) && photo.sequence == 2 && photo.width == 64 && photo.height == 48)
        #expect(rig.ring.askedTimes == [Self.began], "the click did not take it again")
        #expect(rig.runner.preparations.inFlight == 0)
        let prepared = [UInt8](try Data(contentsOf: URL(fileURLWithPath: photo.path)))
        #expect(photo.bytes == prepared.count)

        // The same press's photo taken the usual way (a click with nothing prepared, at the
        // same press time): the same frame, the same image, the same EXIF moment.
        let usual = try Rig()
        defer { usual.remove() }
        var click = trigger(.click, press: 1)
        click.shouldPlaySound = false
        click.time = Timestamp(microseconds: Self.began)
        usual.runner.handle(click)
        #expect(await eventually { usual.saved.count == 1 })
        let other = try #require(usual.saved.first)
        #expect(usual.ring.askedTimes == [Self.began])
        #expect(other.frameTime == photo.frameTime && other.sequence == photo.sequence && other.bytes == photo.bytes)
        let plain = [UInt8](try Data(contentsOf: URL(fileURLWithPath: other.path)))
        #expect(Self.image(plain) == Self.image(prepared) && Self.image(prepared).count < prepared.count - 20)
        let a = try #require(JPEG.captureTime(of: prepared)), b = try #require(JPEG.captureTime(of: plain))
        #expect(a.dateTime == b.dateTime)
        #expect(abs((Int(a.subsec) ?? -9) - (Int(b.subsec) ?? 9)) <= 2, "\(a.subsec) vs \(b.subsec)")
        await rig.runner.shutdown()
        await usual.runner.shutdown()
    }

    @Test(arguments: [ActionTrigger.Kind.longPress, .cancelled, .ended])
    func aPressThatIsNoClickLeavesNoPhotoAndNoPart(_ end: ActionTrigger.Kind) async throws {
        let rig = try Rig()
        defer { rig.remove() }
        rig.send(.began, press: 3, at: Self.began)
        #expect(await eventually { rig.parts.count == 1 })
        rig.send(end, press: 3, at: Self.began + 600_000)
        if end == .longPress { rig.send(.ended, press: 3, at: Self.began + 900_000) }
        #expect(await eventually { rig.parts.isEmpty && rig.runner.preparations.inFlight == 0 }, "\(rig.files())")
        await rig.runner.shutdown()
        #expect(rig.files().isEmpty && rig.saved.isEmpty && rig.log.failures.isEmpty)
    }

    /// Double clicks configured: the first press is a click (a photo), the second a double
    /// click (no photo; its prepared file goes).
    @Test func aDoubleClicksSecondPressLeavesNothing() async throws {
        let rig = try Rig()
        defer { rig.remove() }
        rig.send(.began, press: 1, at: Self.began)
        rig.click(press: 1, at: Self.began + 100_000)
        rig.send(.began, press: 2, at: Self.began + 300_000)
        #expect(await eventually { rig.saved.count == 1 && rig.parts.count == 1 }, "\(rig.files())")
        rig.send(.doubleClick, press: 2, at: Self.began + 400_000)
        rig.send(.ended, press: 2, at: Self.began + 400_000)
        #expect(await eventually { rig.parts.isEmpty && rig.runner.preparations.inFlight == 0 })
        await rig.runner.shutdown()
        #expect(rig.photos.count == 1 && rig.saved.map(\.path).allSatisfy { $0.hasSuffix("press1.jpg") })
        #expect(rig.ring.askedTimes == [Self.began, Self.began + 300_000])
    }

    /// The frame not there yet: a long press decided meanwhile gets no file at all; a click
    /// decided meanwhile gets its photo once the frame comes.
    @Test func decisionsBeforeTheFrameArrives() async throws {
        let held = try Rig(ring: FakeRing(times: Self.times, held: true))
        defer { held.remove() }
        held.send(.began, press: 1, at: Self.began)
        #expect(await eventually { held.ring.askedTimes.count == 1 })
        held.send(.longPress, press: 1, at: Self.began + 500_000)
        held.send(.ended, press: 1, at: Self.began + 800_000)
        held.ring.open()
        #expect(await eventually { held.runner.preparations.inFlight == 0 })
        held.send(.began, press: 2, at: Self.began + 200_000)
        #expect(await eventually { held.ring.askedTimes.count == 2 })
        held.click(press: 2, at: Self.began + 300_000)
        #expect(held.saved.isEmpty && held.photos.isEmpty)
        held.ring.open()
        #expect(await eventually { held.saved.count == 1 })
        await held.runner.shutdown()
        #expect(held.photos.count == 1 && held.parts.isEmpty && held.log.failures.isEmpty)
        #expect(held.saved.first?.frameTime == Timestamp(microseconds: 5_250_000) && held.ring.askedTimes.count == 2)
    }

    /// A camera error while preparing is the click's error, reported once and not waited for
    /// again; an output directory that fails while preparing (a full disk, a card not yet
    /// mounted) is tried again at the click, so space freed meanwhile gives the photo.
    @Test func failuresWhilePreparing() async throws {
        let broken = try Rig(ring: FakeRing(times: Self.times, failure: StreamingError(code: .timedOut, context: "no frame")))
        defer { broken.remove() }
        broken.send(.began, press: 1, at: Self.began)
        #expect(await eventually { broken.ring.askedTimes.count == 1 })
        broken.click(press: 1, at: Self.began + 100_000)
        #expect(await eventually { broken.log.failures.count == 1 })
        #expect(broken.log.failures.first?.code == "camera-timeout")
        #expect(broken.ring.askedTimes == [Self.began])

        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let later = try Rig(ring: FakeRing(times: Self.times, held: true), directory: base + "/card")
        defer { later.remove() }
        later.send(.began, press: 1, at: Self.began)
        later.ring.open()
        // The worker asks for press 2's frame only once press 1's preparation has failed.
        later.send(.began, press: 2, at: Self.began + 1)
        #expect(await eventually { later.ring.askedTimes.count == 2 })
        try FileManager.default.createDirectory(atPath: base + "/card", withIntermediateDirectories: false)
        later.click(press: 1, at: Self.began + 100_000)
        later.send(.cancelled, press: 2, at: Self.began + 100_000)
        later.ring.open()
        later.ring.open()
        #expect(await eventually { later.saved.count == 1 }, "\(later.log.failures)")
        #expect(later.ring.askedTimes == [Self.began, Self.began + 1, Self.began], "taken again at the click")
        #expect(await eventually { later.runner.preparations.inFlight == 0 })
        #expect(try FileManager.default.contentsOfDirectory(atPath: base + "/card").count == 1)
        #expect(later.log.failures.isEmpty)
        await broken.runner.shutdown()
        await later.runner.shutdown()
    }

    /// The digital zoom changed during the press (a knob turned while the button is held):
    /// the click's photo is cropped as the zoom is at the click, as it was before preparing.
    @Test func aZoomChangedDuringThePressIsTheClicksZoom() async throws {
        let rig = try Rig()
        defer { rig.remove() }
        rig.send(.began, press: 1, at: Self.began)
        #expect(await eventually { rig.parts.count == 1 })
        rig.runner.setDigitalZoom(2)
        rig.click(press: 1, at: Self.began + 100_000)
        #expect(await eventually { rig.saved.count == 1 })
        #expect(await eventually { rig.parts.isEmpty })
        let photo = try #require(rig.saved.first)
        #expect(photo.width == 32 && photo.height == 24, "\(photo.width)×\(photo.height)")
        #expect(rig.ring.askedTimes == [Self.began, Self.began])
        await rig.runner.shutdown()
    }

    /// At most `queueLimit` photos prepared at once; the presses beyond get their photo at
    /// the click. One prepared file per press.
    @Test func preparedPhotosAreBounded() async throws {
        let rig = try Rig(queueLimit: 2)
        defer { rig.remove() }
        for press in 1...4 { rig.send(.began, press: PressID(rawValue: UInt64(press)), at: Self.began + Int64(press)) }
        rig.send(.began, press: 1, at: Self.began + 1)  // the same press again: still one
        #expect(await eventually { rig.parts.count == 2 })
        #expect(rig.runner.preparations.inFlight == 2)
        // One at a time: 2 photo requests may wait (the queue limit, as before).
        for press in 1...4 {
            rig.click(press: PressID(rawValue: UInt64(press)), at: Self.began + 100_000)
            #expect(await eventually { rig.saved.count == press })
        }
        #expect(rig.log.failures.isEmpty)
        #expect(rig.photos.count == 4 && rig.parts.isEmpty && rig.runner.preparations.inFlight == 0)
        #expect(rig.ring.askedTimes.count == 4, "2 prepared + 2 at the click: \(rig.ring.askedTimes)")
        await rig.runner.shutdown()
    }

    /// A click refused for a full photo queue (`queue-full`, as before) leaves no prepared file.
    @Test func aClickRefusedForAFullQueueLeavesNoPart() async throws {
        let rig = try Rig(ring: FakeRing(times: Self.times, held: true), queueLimit: 2)
        defer { rig.remove() }
        rig.send(.began, press: 1, at: Self.began)
        #expect(await eventually { rig.ring.askedTimes.count == 1 })
        rig.click(press: 5, at: Self.began)  // two requests of presses not prepared fill the queue
        rig.click(press: 6, at: Self.began)
        rig.click(press: 1, at: Self.began + 100_000)
        #expect(rig.log.failures == [.queueFull(kind: "photo", press: 1)])
        for _ in 0..<3 { rig.ring.open() }
        #expect(await eventually { rig.saved.count == 2 && rig.runner.preparations.inFlight == 0 })
        await rig.runner.shutdown()
        #expect(rig.parts.isEmpty && rig.photos.count == 2 && rig.saved.allSatisfy { !$0.path.hasSuffix("press1.jpg") })
        #expect(rig.ring.askedTimes.count == 3, "press 1 not encoded after its refusal: \(rig.ring.askedTimes)")
    }

    /// `photo-frame = "release"`: nothing prepared, the photo is taken at the click.
    @Test(arguments: [(CaptureSettings.PhotoMoment.release, StreamMode.always), (.release, .onPress)])
    func modesThatDoNotPrepare(_ moment: CaptureSettings.PhotoMoment, _ mode: StreamMode) async throws {
        let ring = FakeRing(times: Self.times, held: true)
        let rig = try Rig(ring: ring, moment: moment, mode: mode)
        defer { rig.remove() }
        rig.send(.began, press: 1, at: Self.began)
        try await Task.sleep(for: .milliseconds(200))
        #expect(ring.askedTimes.isEmpty && rig.runner.preparations.inFlight == 0)
        rig.click(press: 1, at: Self.began + 100_000)
        #expect(await eventually { ring.askedTimes.count == 1 })
        ring.open()
        #expect(await eventually { rig.saved.count == 1 })
        #expect(ring.askedTimes == [moment == .press ? Self.began : Self.began + 100_000])
        await rig.runner.shutdown()
    }

    /// The daemon stops with a press held: the prepared file is removed.
    @Test func shutdownRemovesPreparedFiles() async throws {
        let rig = try Rig()
        defer { rig.remove() }
        rig.send(.began, press: 1, at: Self.began)
        #expect(await eventually { rig.parts.count == 1 })
        await rig.runner.shutdown()
        #expect(rig.files().isEmpty)
    }
}
