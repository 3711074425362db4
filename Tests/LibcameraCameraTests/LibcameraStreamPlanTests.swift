import CLibcameraLoader
import Dispatch
import Vocabulary
import Frames
import Testing
import V4L2

@testable import LibcameraCamera

/// The two streams (docs/libcamera.md#two-streams): which roles and sizes are asked, what
/// validate()'s verdict (faked here) makes of them, the text the daemon and `evcapture
/// controls` say, and the live view's frames handed over.
struct LibcameraStreamPlanTests {
    let yuyv1080 = LibcameraFormat(fourcc: fourcc("YUYV"), width: 1920, height: 1080)

    @Test func aLiveViewNarrowerThanTheCaptureStreamAsksForAViewfinderOfItsWidthWithTheAspectRatio() {
        let plan = LibcameraStreamPlan(main: yuyv1080, liveViewWidth: 640)
        #expect(
            plan.requests == [
                LibcameraStreamRequest(role: .videoRecording, format: yuyv1080),
                LibcameraStreamRequest(role: .viewfinder, format: LibcameraFormat(fourcc: fourcc("YU12"), width: 640, height: 360)),
            ])
        // 4:3 (the HQ camera's 2028×1520 mode), an odd preview-width: even sides
        let hq = LibcameraStreamPlan(main: LibcameraFormat(fourcc: fourcc("YUYV"), width: 2028, height: 1520), liveViewWidth: 641)
        #expect(hq.requests.last?.format == LibcameraFormat(fourcc: fourcc("YU12"), width: 640, height: 480))
        // the smallest preview-width the config takes
        let small = LibcameraStreamPlan(main: yuyv1080, liveViewWidth: 160)
        #expect(small.requests.last?.format == LibcameraFormat(fourcc: fourcc("YU12"), width: 160, height: 90))
    }

    @Test func noLiveViewOrOneNoNarrowerThanTheCaptureStreamAsksForOneStream() {
        let none = LibcameraStreamPlan(main: yuyv1080, liveViewWidth: nil)
        #expect(none.requests == [LibcameraStreamRequest(role: .videoRecording, format: yuyv1080)])
        #expect(none.decide(LibcameraValidation(status: .valid, proposed: [])) == .fromMainStream(reason: "no live view configured"))
        // vimc's 360×240 with the default 640; one pixel narrower still asks
        let vimc = LibcameraStreamPlan(main: LibcameraFormat(fourcc: fourcc("BG24"), width: 360, height: 240), liveViewWidth: 640)
        #expect(vimc.requests.count == 1)
        #expect(
            "\(vimc.decide(LibcameraValidation(status: .valid, proposed: [])))"
                == "live view: from the main stream (the main stream, 360x240, is no wider than preview-width 640)")
        #expect(LibcameraStreamPlan(main: yuyv1080, liveViewWidth: 1920).requests.count == 1)
        #expect(LibcameraStreamPlan(main: yuyv1080, liveViewWidth: 1918).requests.count == 2)
    }

    @Test func theViewfinderIsTakenWhenTheCameraKeepsItSmallAndInAFormatTheLiveViewTakes() {
        let plan = LibcameraStreamPlan(main: yuyv1080, liveViewWidth: 640)
        let yu12 = LibcameraFormat(fourcc: fourcc("YU12"), width: 640, height: 360)
        #expect(plan.decide(LibcameraValidation(status: .valid, proposed: [yuyv1080, yu12])) == .own(yu12))
        #expect("\(LiveViewStream.own(yu12))" == "live view: its own 640x360 YU12 stream")
        // adjusted: NV12 for YUV420, the height aligned (IPU3's viewfinder): taken as adjusted
        let nv12 = LibcameraFormat(fourcc: fourcc("NV12"), width: 640, height: 368)
        #expect(plan.decide(LibcameraValidation(status: .adjusted, proposed: [yuyv1080, nv12])) == .own(nv12))
    }

    @Test func aCameraThatDropsRefusesOrChangesTheSecondStreamLeavesTheLiveViewOnTheMainStream() {
        let plan = LibcameraStreamPlan(main: yuyv1080, liveViewWidth: 640)
        let reason = { (v: LibcameraValidation) -> String in "\(plan.decide(v))" }
        // vimc: validate() keeps one configuration and says Adjusted
        #expect(
            reason(LibcameraValidation(status: .adjusted, proposed: [yuyv1080]))
                == "live view: from the main stream (the camera gives one stream)")
        #expect(
            reason(LibcameraValidation(status: .invalid, proposed: [yuyv1080, yuyv1080]))
                == "live view: from the main stream (the camera refuses a second stream beside it)")
        let rgb = LibcameraFormat(fourcc: fourcc("XR24"), width: 640, height: 360)
        #expect(
            reason(LibcameraValidation(status: .adjusted, proposed: [yuyv1080, rgb]))
                == "live view: from the main stream (the camera offers the second stream in XR24, which the live view does not take)")
        let nv12Main = LibcameraFormat(fourcc: fourcc("NV12"), width: 1920, height: 1080)
        #expect(
            reason(LibcameraValidation(status: .adjusted, proposed: [nv12Main, rgb]))
                == "live view: from the main stream (with a second stream the camera would change the main stream to NV12)")
        let big = LibcameraFormat(fourcc: fourcc("YU12"), width: 1920, height: 1080)
        #expect(
            reason(LibcameraValidation(status: .adjusted, proposed: [yuyv1080, big]))
                == "live view: from the main stream (the camera proposes 1920x1080 for the second stream, no smaller than the main one)")
    }

    @Test func theStartUpAndReportLinesSayWhereTheLiveViewComesFrom() {
        let own = LiveViewStream.own(LibcameraFormat(fourcc: fourcc("YU12"), width: 640, height: 360))
        #expect(
            LibcameraReport.liveViewLine(main: yuyv1080, preview: own)
                == "at YUYV 1920x1080 and preview-width 640, live view: its own 640x360 YU12 stream")
    }

    @Test func theViewfindersPlanesAreLaidOutAsTheLiveViewReadsThem() throws {
        // three planes apart in one buffer (padding between them), as a Pi's lores stream may be
        let format = StreamFormat(width: 4, height: 2, pixelFormat: .yuv420, bytesPerLine: 4)
        let frames = ViewfinderFrames()
        frames.begin(format)
        let y: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8], cb: [UInt8] = [20, 21], cr: [UInt8] = [30, 31]
        y.withUnsafeBufferPointer { py in
            cb.withUnsafeBufferPointer { pb in
                cr.withUnsafeBufferPointer { pr in
                    var frame = evc_lc_frame()
                    frame.plane_count = 3
                    frame.planes = (py.baseAddress, pb.baseAddress, pr.baseAddress)
                    frame.plane_bytes = (8, 2, 2)
                    frame.sequence = 7
                    LibcameraFrameStream.store(
                        frame, in: frames, time: Timestamp(microseconds: 500),
                        kind: FrameTimestampKind(isMonotonic: true, isStartOfExposure: true))
                }
            }
        }
        let got = try #require(frames.frame(after: Timestamp(microseconds: 499), timeout: .zero))
        #expect(got.frame.bytes == y + cb + cr)
        #expect(got.frame.sequence == 7 && got.time == Timestamp(microseconds: 500) && got.timestampKind.isStartOfExposure)
        #expect(got.frame.format == format)
    }

    @Test func theViewfinderGivesOnlyNewerFramesAndNothingWithoutASecondStream() throws {
        let frames = ViewfinderFrames()
        let format = StreamFormat(width: 2, height: 2, pixelFormat: .yuv420, bytesPerLine: 2)
        #expect(frames.frame(after: Timestamp(microseconds: 0), timeout: .seconds(5)) == nil)  // at once: no stream
        frames.begin(format)
        let kind = FrameTimestampKind(isMonotonic: true, isStartOfExposure: true)
        frames.store(count: 6, sequence: 1, time: Timestamp(microseconds: 100), kind: kind) { $0.copyBytes(from: [1, 2, 3, 4, 5, 6]) }
        #expect(frames.frame(after: Timestamp(microseconds: 99), timeout: .zero)?.frame.sequence == 1)
        #expect(frames.frame(after: Timestamp(microseconds: 100), timeout: .milliseconds(20)) == nil)  // not newer
        // a waiter gets the next frame stored from another thread
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
            frames.store(count: 6, sequence: 2, time: Timestamp(microseconds: 200), kind: kind) { $0.copyBytes(from: [6, 5, 4, 3, 2, 1]) }
        }
        let next = try #require(frames.frame(after: Timestamp(microseconds: 100), timeout: .seconds(5)))
        #expect(next.frame.sequence == 2 && next.frame.bytes == [6, 5, 4, 3, 2, 1])
        // the stream stops: a waiter returns at once, and a store after it is dropped
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { frames.begin(nil) }
        let start = ContinuousClock.now
        #expect(frames.frame(after: Timestamp(microseconds: 200), timeout: .seconds(5)) == nil)
        #expect(ContinuousClock.now - start < .seconds(4))
        frames.store(count: 6, sequence: 3, time: Timestamp(microseconds: 300), kind: kind) { _ in }
        #expect(frames.format == nil && frames.frame(after: Timestamp(microseconds: 0), timeout: .zero) == nil)
    }
}
