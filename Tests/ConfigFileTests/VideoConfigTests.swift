import Actions
import ConfigFile
import Movie
import Testing
import Media

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
