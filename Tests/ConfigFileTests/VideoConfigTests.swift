import ConfigFile
import Movie
import Testing
import Vocabulary

@Suite struct VideoConfigTests {
    @Test func mp4WithAutomaticEncoderIsTheDefault() throws {
        let c = try Config.parse("", file: "empty.toml")
        #expect(c.daemon.capture.videoFormat == .mp4)
        #expect(c.daemon.capture.h264 == H264Settings(encoder: .automatic, rateControl: .quality(23), keyframeInterval: .seconds(1)))
        #expect(c.daemon.capture.videoPattern == VideoFormat.mp4.defaultPattern)
        // The default names end as the format does.
        #expect(VideoFormat.mp4.defaultPattern.pattern.hasSuffix(".mp4") && VideoFormat.avi.defaultPattern.pattern.hasSuffix(".avi"))
    }

    @Test func everyVideoKeyParsesIntoTheRuntimeSettings() throws {
        let c = try Config.parse(
            """
            [output]
            video-format = "mp4"
            video-encoder = "libopenh264"
            video-bitrate = 2500
            video-keyframe-interval = 0.5
            video-name = "clip-{press}.mp4"
            """, file: "video.toml")
        #expect(
            c.daemon.capture.h264
                == H264Settings(encoder: .named("libopenh264"), rateControl: .bitrate(2_500_000), keyframeInterval: .milliseconds(500)))
        #expect(c.daemon.capture.videoPattern.pattern == "clip-{press}.mp4")
        let avi = try Config.parse("[output]\nvideo-format = \"avi\"\n", file: "avi.toml")
        #expect(avi.daemon.capture.videoFormat == .avi)
        let crf = try Config.parse("[output]\nvideo-crf = 18\nvideo-encoder = \"auto\"\n", file: "crf.toml")
        #expect(crf.daemon.capture.h264.rateControl == .quality(18) && crf.daemon.capture.h264.encoder == .automatic)
    }

    @Test func badVideoKeysAreErrorsNamingFileLineAndKey() {
        ConfigTests.expectError(
            "[output]\nvideo-format = \"mkv\"\n",
            "bad.toml:2: output.video-format must be one of \"mp4\", \"avi\", not \"mkv\"")
        ConfigTests.expectError(
            "[output]\n\nvideo-encoder = \"x264\"\n",
            "bad.toml:3: output.video-encoder must be one of \"auto\", \"h264_v4l2m2m\", \"libx264\", \"libopenh264\", not \"x264\"")
        ConfigTests.expectError("[output]\nvideo-crf = 60\n", "bad.toml:2: output.video-crf must be between 0 and 51, not 60")
        ConfigTests.expectError("[output]\nvideo-bitrate = \"fast\"\n", "bad.toml:2: output.video-bitrate must be an integer, not \"fast\"")
        ConfigTests.expectError(
            "[output]\nvideo-crf = 20\nvideo-bitrate = 3000\n",
            "bad.toml:3: output.video-crf and output.video-bitrate both set: give one (constant quality, or kbit/s)")
        ConfigTests.expectError(
            "[output]\nvideo-keyframe-interval = 2\n",
            "bad.toml:2: output.video-keyframe-interval must be between 0.1 and 1 seconds, not 2")
        ConfigTests.expectError(
            "[output]\nvideo-name = \"v-{press}.avi\"\n",
            "bad.toml:2: output.video-name \"v-{press}.avi\" ends in .avi, but output.video-format is \"mp4\": end it in .mp4 or set video-format = \"avi\""
        )
    }
}

@Suite struct PixelFormatConfigTests {
    @Test func eachPixelFormatAsksTheCameraForItsFormats() throws {
        #expect(try Config.parse("", file: "empty.toml").daemon.capture.pixelFormats == PixelFormat.captureOrder)
        let expected: [(String, [PixelFormat])] = [
            ("auto", PixelFormat.captureOrder), ("mjpeg", [.mjpeg, .jpeg]), ("yuyv", [.yuyv]), ("h264", [.h264]),
        ]
        for (value, formats) in expected {
            let c = try Config.parse("[camera]\npixel-format = \"\(value)\"\n", file: "\(value).toml")
            #expect(c.daemon.capture.pixelFormats == formats, "\(value)")
            #expect(c.daemon.capture.stream.wantsH264 == (value == "h264"), "\(value)")
        }
        // "auto" never takes the camera's H.264: photos and the live view need pictures.
        #expect(!PixelFormat.captureOrder.contains(.h264))
    }

    @Test func badPixelFormatsAreErrorsNamingFileLineAndKey() {
        ConfigTests.expectError(
            "[camera]\n\npixel-format = \"nv12\"\n",
            "bad.toml:3: camera.pixel-format must be one of \"auto\", \"mjpeg\", \"yuyv\", \"h264\", not \"nv12\"")
        ConfigTests.expectError(
            "[camera]\npixel-format = \"H264\"\n",
            "bad.toml:2: camera.pixel-format must be one of \"auto\", \"mjpeg\", \"yuyv\", \"h264\", not \"H264\"")
        ConfigTests.expectError("[camera]\npixel-format = 264\n", "bad.toml:2: camera.pixel-format must be a string, not 264")
        // AVI holds MJPEG: the camera's H.264 cannot go into it, whichever section comes first.
        let avi =
            "camera.pixel-format \"h264\" cannot be recorded as output.video-format \"avi\" (AVI holds MJPEG): use video-format = \"mp4\", or another pixel-format"
        ConfigTests.expectError("[camera]\nfps = 30\npixel-format = \"h264\"\n[output]\nvideo-format = \"avi\"\n", "bad.toml:3: " + avi)
        ConfigTests.expectError("[output]\nvideo-format = \"avi\"\n[camera]\npixel-format = \"h264\"\n", "bad.toml:4: " + avi)
        ConfigTests.expectError(
            "[camera]\nbackend = \"libcamera\"\npixel-format = \"yuyv\"\n",
            "bad.toml:3: camera.pixel-format \"yuyv\" is for V4L2 cameras, but camera.backend is \"libcamera\"")
    }

    @Test func pixelFormatsThatFitTheVideoFormatLoad() throws {
        // MJPEG and YUYV still record AVI; H.264 records MP4 with no encoder.
        #expect(
            try Config.parse("[camera]\npixel-format = \"mjpeg\"\n[output]\nvideo-format = \"avi\"\n", file: "a.toml").daemon.capture
                .videoFormat == .avi)
        #expect(
            try Config.parse("[camera]\npixel-format = \"yuyv\"\n[output]\nvideo-format = \"avi\"\n", file: "b.toml").daemon.capture
                .videoFormat == .avi)
        let h264 = try Config.parse("[camera]\npixel-format = \"h264\"\n[output]\nvideo-format = \"mp4\"\n", file: "c.toml")
        #expect(
            h264.daemon.capture.videoFormat.report(h264.daemon.capture.h264, stream: h264.daemon.capture.stream)
                == "video: H.264 in fragmented MP4, the camera's H.264 muxed as it is (no encoder: [camera] pixel-format = \"h264\")")
        #expect(
            try Config.parse("[camera]\nbackend = \"libcamera\"\npixel-format = \"auto\"\n", file: "d.toml").daemon.capture.pixelFormats
                == PixelFormat.captureOrder)
    }
}
