import EvcaptureTesting
import Synchronization
import Testing
import V4L2
import Vocabulary
@testable import Frames
@testable import Recording

/// The capture stream the daemon makes from its capture settings and hands to the action
/// runner (docs/architecture.md#seams): the settings' ring, mode and idle stop, a camera's
/// H.264 made into pictures by Movie's decoder, and each failure of the stream told.
@Suite struct CaptureStreamTests {
    @Test func theCaptureStreamIsTheOneTheSettingsDescribe() {
        let settings = CaptureSettings(
            devicePath: "fake-camera", outputDirectory: "/nonexistent", width: 640, height: 480, streamMode: .onPress,
            ring: RingLimits(seconds: 3, memoryBytes: 8 << 20), streamIdleStop: .seconds(4), framesPerSecond: 15)
        let source = settings.captureStream(logger: testLogger)
        #expect(source.settings == settings.stream)
        #expect(source.mode == .onPress && source.idleStop == .seconds(4) && source.limits == settings.ring)
        // Without a decoder a photo of an H.264 camera would be an access unit, not a picture.
        let pictures = source.pictures
        #expect(pictures != nil)
        // Movie's decoder: nothing to decode is an error, not a frame.
        #expect(throws: StreamingError.self) { _ = try pictures?.picture([]) }
    }

    @Test func aFailureOfTheStreamIsTold() async {
        let settings = CaptureSettings(devicePath: "fake-camera", outputDirectory: "/nonexistent")
        let told = Mutex<[StreamingError]>([])
        let source = settings.captureStream(
            opener: FrameStreamOpener { _ throws(StreamingError) in
                throw StreamingError(code: .deviceRemoved, errno: 19, context: "opening fake-camera")
            },
            logger: testLogger, onError: { e in told.withLock { $0.append(e) } })
        source.start()
        defer { source.stopAndWait() }
        #expect(await eventually { told.withLock { $0.count } == 1 })
        #expect(told.withLock { $0.first?.code } == .deviceRemoved)
    }
}
