#if canImport(Glibc)
import Glibc
#endif
import Vocabulary
import Movie
import Output
import Testing
@testable import Recording

@Suite struct VideoLineTests {
    /// The video line says the format, encoder, length and frames the recording fell behind
    /// on; one that ended early says why.
    @Test func aVideoLineSaysFormatEncoderDurationSkippedAndWhyItStopped() {
        var video = VideoResult(
            path: "/o/v.mp4", frames: 61, framesPerSecond: 30, width: 640, height: 480, truncated: false,
            frameTime: Timestamp(microseconds: 1_234_567_000),
            skipped: 2, format: .mp4, encoder: "libx264", duration: 2.0334)
        #expect(
            JSONLines.outcome(.videoSaved(video, press: 3), time: Timestamp(microseconds: 2_000_000))
                == #"{"event":"action","action":"video","press":3,"file":"/o/v.mp4","frames":61,"frame_time":1234.567,"format":"mp4","encoder":"libx264","duration":2.033,"skipped":2,"time":2.000000}"#
        )
        video.truncated = true
        video.stoppedBy = .file(FileWriteError(errno: ENOSPC, context: "writing /o/.evcapture-x~v.mp4.part"))
        let line = JSONLines.outcome(.videoSaved(video, press: 3), time: Timestamp(microseconds: 2_000_000))
        #expect(
            line.contains(#""stopped":"disk-full","reason":"output file: writing /o/.evcapture-x~v.mp4.part: no space left on device""#),
            "\(line)")
        #expect(
            ReadableLines.outcome(.videoSaved(video, press: 3), time: Timestamp(microseconds: 0)).hasSuffix("2 skipped, stopped: disk-full")
        )
    }

    @Test func aRecoveredRecordingIsAnActionLine() {
        let recovered = RecoveredVideo(path: "/o/v.mp4", temporaryName: ".evcapture-k2~v.mp4.part", format: .mp4, frames: 48)
        #expect(
            JSONLines.outcome(.videoRecovered(recovered), time: Timestamp(microseconds: 1_000_000))
                == #"{"event":"action","action":"video-recovered","file":"/o/v.mp4","frames":48,"format":"mp4","from":".evcapture-k2~v.mp4.part","time":1.000000}"#
        )
    }
}
