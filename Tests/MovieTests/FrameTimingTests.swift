@testable import Movie
import Testing

@Suite struct FrameTimingTests {
    @Test func kernelTimestampsBecome90kHzTimesFromTheFirstFrame() {
        var t = FrameTiming(keyframeInterval: .seconds(1), nominalRate: 25)
        let first = t.frame(at: 5_000_000)
        #expect(first.pts == 0 && first.keyframe && first.duration == 3600)
        // Variable rate: 40 ms, then 100 ms (a camera slowing down in the dark), kept as filmed.
        #expect(t.frame(at: 5_040_000).pts == 3600)
        let slow = t.frame(at: 5_140_000)
        #expect(slow.pts == 12_600 && slow.duration == 9000)
        #expect(FrameTiming.ticks(micros: 11) == 1 && FrameTiming.ticks(micros: 5) == 0 && FrameTiming.ticks(micros: -11) == -1)
    }

    @Test func timesOnlyGoForward() {
        var t = FrameTiming(keyframeInterval: .seconds(1), nominalRate: 30)
        _ = t.frame(at: 1_000_000)
        #expect(t.frame(at: 1_033_333).pts == 3000)
        // A timestamp equal to or before the last one is placed one tick after it.
        #expect(t.frame(at: 1_033_333).pts == 3001)
        #expect(t.frame(at: 900_000).pts == 3002)
    }

    @Test func keyframesComeSoThatNoFragmentIsLongerThanTheInterval() {
        for (fps, interval) in [(30.0, 1.0), (25.0, 0.5), (7.5, 1.0), (60.0, 1.0)] {
            var t = FrameTiming(keyframeInterval: .milliseconds(Int(interval * 1000)), nominalRate: fps)
            var keyframes: [Int64] = []
            var last: Int64 = 0
            for i in 0..<Int(fps * 5) {
                // 2 % jitter around the nominal interval
                let jitter = Int64(i % 3 - 1) * Int64(20_000 / fps)
                let f = t.frame(at: 10_000_000 + Int64(Double(i) * 1_000_000 / fps) + jitter)
                if f.keyframe { keyframes.append(f.pts) }
                last = f.pts + f.duration
            }
            let bounds = keyframes + [last]
            let longest = zip(bounds, bounds.dropFirst()).map { $1 - $0 }.max() ?? 0
            #expect(longest <= Int64(interval * 90_000), "\(fps) fps, \(interval) s: fragments up to \(longest) ticks")
            #expect(longest >= Int64(interval * 90_000 * 0.8), "\(fps) fps, \(interval) s: fragments only \(longest) ticks")
            #expect(keyframes.first == 0)
        }
    }
}

@Suite struct EncoderChoiceTests {
    @Test func automaticPrefersTheHardwareEncoderThenX264ThenOpenH264() throws {
        let all: Set = ["h264_v4l2m2m", "libx264", "libopenh264"]
        let pi4 = try EncoderChoice.choose(.automatic, hardwareNode: "/dev/video11", available: all).get()
        #expect(pi4.name == "h264_v4l2m2m" && pi4.isHardware && pi4.reason.contains("/dev/video11"))
        let pi5 = try EncoderChoice.choose(.automatic, hardwareNode: nil, available: all).get()
        #expect(pi5.name == "libx264" && !pi5.isHardware && pi5.reason.contains("no V4L2 hardware H.264 encoder"))
        let open = try EncoderChoice.choose(.automatic, hardwareNode: nil, available: ["libopenh264"]).get()
        #expect(open.name == "libopenh264")
        #expect(throws: MovieError.self) { try EncoderChoice.choose(.automatic, hardwareNode: nil, available: []).get() }
    }

    @Test func aNamedEncoderMustExist() throws {
        let named = try EncoderChoice.choose(.named("libopenh264"), hardwareNode: "/dev/video11", available: ["libopenh264", "libx264"])
            .get()
        #expect(named.name == "libopenh264" && named.reason == "configured")
        let missing = EncoderChoice.choose(.named("libx265"), hardwareNode: nil, available: ["libx264"])
        #expect(throws: MovieError.self) { try missing.get() }
        // The hardware encoder by name, with no hardware: an error, not a silent software fallback.
        #expect(throws: MovieError.self) {
            try EncoderChoice.choose(.named("h264_v4l2m2m"), hardwareNode: nil, available: ["h264_v4l2m2m"]).get()
        }
    }

    @Test func thisSystemsFFmpegHasASoftwareEncoder() throws {
        let choice = try EncoderChoice.current(H264Settings()).get()
        #expect(["libx264", "libopenh264", "h264_v4l2m2m"].contains(choice.name), "\(choice)")
    }

    @Test func bitrateForEncodersWithoutConstantQuality() {
        #expect(H264Settings(rateControl: .bitrate(2_000_000)).bitrate(width: 640, height: 480, framesPerSecond: 30) == 2_000_000)
        let crf23 = H264Settings(rateControl: .quality(23)).bitrate(width: 640, height: 480, framesPerSecond: 30)
        let crf17 = H264Settings(rateControl: .quality(17)).bitrate(width: 640, height: 480, framesPerSecond: 30)
        #expect(crf23 == 921_600 && crf17 == 2 * crf23)
    }
}
