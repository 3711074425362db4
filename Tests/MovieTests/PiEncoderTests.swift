#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Movie
import Testing
import V4L2
import Vocabulary

/// The Raspberry Pi's encoders (docs/video.md#which-encoder, docs/raspberry-pi.md#videos):
/// what each encoder is told, the parameter sets repeated for the hardware encoder, and the
/// fall back to software when the hardware encoder cannot be opened.
@Suite struct PiEncoderTests {
    static let sps: [UInt8] = [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1E, 0xDA]
    static let pps: [UInt8] = [0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80]
    static let idr: [UInt8] = [0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00, 0x21]
    static let slice: [UInt8] = [0, 0, 1, 0x41, 0x9A, 0x02, 0x03]

    @Test func theHardwareEncoderGetsABitrateAndRepeatedParameterSets() {
        let settings = H264Settings(rateControl: .quality(23), keyframeInterval: .milliseconds(500))
        let pi4 = EncoderSetup(encoder: "h264_v4l2m2m", settings: settings, width: 1280, height: 720, framesPerSecond: 30)
        #expect(pi4.bitRate == settings.bitrate(width: 1280, height: 720, framesPerSecond: 30))
        #expect(pi4.privateOptions.isEmpty, "h264_v4l2m2m has no crf, preset or tune: \(pi4.privateOptions)")
        #expect(!pi4.globalHeader && pi4.repeatsParameterSets)
        #expect(pi4.gopSize == 15)
        let pi5 = EncoderSetup(encoder: "libx264", settings: settings, width: 1280, height: 720, framesPerSecond: 30)
        #expect(pi5.bitRate == nil)
        #expect(pi5.privateOptions == ["crf": "23", "preset": "veryfast", "tune": "zerolatency", "forced-idr": "1"])
        #expect(pi5.globalHeader && !pi5.repeatsParameterSets)
        // a live stream wants the parameter sets in the stream: libx264 puts them before each
        // IDR frame itself, h264_v4l2m2m gets them repeated
        let live5 = EncoderSetup(encoder: "libx264", settings: settings, width: 1280, height: 720, framesPerSecond: 30, globalHeader: false)
        #expect(!live5.globalHeader && !live5.repeatsParameterSets)
        let live4 = EncoderSetup(
            encoder: "h264_v4l2m2m", settings: settings, width: 1280, height: 720, framesPerSecond: 30, globalHeader: false)
        #expect(!live4.globalHeader && live4.repeatsParameterSets)
        let bitrate = EncoderSetup(
            encoder: "libx264", settings: H264Settings(rateControl: .bitrate(2_000_000)), width: 640, height: 480, framesPerSecond: nil)
        #expect(bitrate.bitRate == 2_000_000 && bitrate.privateOptions["crf"] == nil)
        // no frame rate: 30; a keyframe interval above the maximum is held to 1 s
        #expect(bitrate.gopSize == 30)
        let long = EncoderSetup(
            encoder: "libopenh264", settings: H264Settings(keyframeInterval: .seconds(5)), width: 640, height: 480, framesPerSecond: 10)
        #expect(long.gopSize == 10 && long.globalHeader && !long.repeatsParameterSets && long.bitRate != nil)
        let slow = EncoderSetup(encoder: "h264_v4l2m2m", settings: settings, width: 640, height: 480, framesPerSecond: 0.5)
        #expect(slow.gopSize == 1)
    }

    @Test func nalUnitsAreSplitAtTheirStartCodes() {
        let units = AnnexB.nalUnits(Self.sps + Self.pps + Self.idr + Self.slice)
        #expect(units.map(\.type) == [7, 8, 5, 1])
        #expect(units.map(\.range.count) == [Self.sps.count, Self.pps.count, Self.idr.count, Self.slice.count])
        #expect(AnnexB.nalUnits([0x65, 0x88]).isEmpty)
        #expect(AnnexB.nalUnits([]).isEmpty)
        // a start code at the very end opens no unit
        #expect(AnnexB.nalUnits(Self.slice + [0, 0, 1]).map(\.type) == [1])
    }

    @Test func everyKeyframeCarriesTheParameterSets() {
        var repeater = ParameterSetRepeater()
        // the first keyframe has them (as v4l2m2m gives them, once): unchanged
        #expect(repeater.process(Self.sps + Self.pps + Self.idr) == Self.sps + Self.pps + Self.idr)
        #expect(repeater.process(Self.slice) == Self.slice)
        // a later keyframe without them gets them in front
        #expect(repeater.process(Self.idr) == Self.sps + Self.pps + Self.idr)
        #expect(repeater.process(Self.slice) == Self.slice)
        // new parameter sets replace the old ones
        let sps2: [UInt8] = [0, 0, 0, 1, 0x67, 0x64, 0x00, 0x28]
        #expect(repeater.process(sps2 + Self.pps + Self.idr) == sps2 + Self.pps + Self.idr)
        #expect(repeater.process(Self.idr) == sps2 + Self.pps + Self.idr)
    }

    @Test func parameterSetsAloneWaitForTheNextPicture() {
        var repeater = ParameterSetRepeater()
        // before any parameter set a keyframe is passed as it is (nothing to repeat)
        #expect(repeater.process(Self.idr) == Self.idr)
        // the header in a packet of its own (V4L2's separate header mode): no sample, held
        #expect(repeater.process(Self.sps + Self.pps) == nil)
        #expect(repeater.parameterSets == Self.sps + Self.pps)
        #expect(repeater.process(Self.slice) == Self.sps + Self.pps + Self.slice)
        #expect(repeater.process(Self.slice) == Self.slice)
        #expect(repeater.process([0, 0, 1, 0x06, 0x05]) == nil, "an SEI alone is no picture")
        #expect(repeater.process(Self.slice) == Self.slice)
    }

    @Test func automaticChoiceOfTheHardwareEncoderKeepsASoftwareFallback() throws {
        let pi4 = try EncoderChoice.choose(.automatic, hardwareNode: "/dev/video11", available: ["h264_v4l2m2m", "libx264"]).get()
        #expect(pi4.name == "h264_v4l2m2m" && pi4.fallback == "libx264")
        let openh264 = try EncoderChoice.choose(.automatic, hardwareNode: "/dev/video11", available: ["h264_v4l2m2m", "libopenh264"]).get()
        #expect(openh264.fallback == "libopenh264")
        let alone = try EncoderChoice.choose(.automatic, hardwareNode: "/dev/video11", available: ["h264_v4l2m2m"]).get()
        #expect(alone.fallback == nil)
        // named: what was asked for, or an error — never a fallback
        let named = try EncoderChoice.choose(.named("h264_v4l2m2m"), hardwareNode: "/dev/video11", available: ["h264_v4l2m2m", "libx264"])
            .get()
        #expect(named.fallback == nil)
        let pi5 = try EncoderChoice.choose(.automatic, hardwareNode: nil, available: ["h264_v4l2m2m", "libx264"]).get()
        #expect(pi5.name == "libx264" && pi5.fallback == nil)
    }

    /// This machine's FFmpeg has h264_v4l2m2m but no V4L2 H.264 encoder device: the
    /// hardware choice (as `auto` makes it on a Pi 4) fails to open, and the recording is
    /// made with its software fallback — a real encode, read back by the writer's report.
    @Test(.enabled(if: EncoderChoice.availableEncoders.isSuperset(of: ["h264_v4l2m2m", "libx264"]) && EncoderChoice.hardwareNode == nil))
    func aHardwareEncoderThatCannotOpenFallsBackToSoftware() throws {
        let path = NSTemporaryDirectory() + "fallback-\(getpid()).mp4"
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        let format = StreamFormat(width: 64, height: 48, pixelFormat: .yuyv, bytesPerLine: 128, framesPerSecond: 25)
        let hardware = EncoderChoice(
            name: "h264_v4l2m2m", isHardware: true, reason: "hardware H.264 encoder /dev/video11", fallback: "libx264")
        let writer = try FragmentedMP4Writer(
            fd: fd, path: path, format: format, settings: H264Settings(), encoder: hardware, creationTime: 0)
        for i in 0..<10 { try writer.append([UInt8](repeating: UInt8(i * 20), count: 64 * 48 * 2), at: Int64(i) * 40_000) }
        try writer.finish()
        #expect(writer.encoder?.name == "libx264" && writer.encoder?.isHardware == false)
        #expect(writer.encoder?.reason.contains("h264_v4l2m2m could not be opened") == true, "\(String(describing: writer.encoder))")
        #expect(writer.frames == 10)
        // without a fallback (a named encoder) the failure is the recording's
        var named = hardware
        named.fallback = nil
        #expect(throws: MovieError.self) {
            _ = try FragmentedMP4Writer(fd: fd, path: path, format: format, settings: H264Settings(), encoder: named, creationTime: 0)
        }
    }

    /// The live stream opens its encoder the same way: the hardware choice that cannot be
    /// opened falls back to software, whose IDR frames carry their parameter sets.
    @Test(.enabled(if: EncoderChoice.availableEncoders.isSuperset(of: ["h264_v4l2m2m", "libx264"]) && EncoderChoice.hardwareNode == nil))
    func theLiveStreamFallsBackToSoftwareToo() throws {
        let format = StreamFormat(width: 64, height: 48, pixelFormat: .yuyv, bytesPerLine: 128, framesPerSecond: 25)
        let hardware = EncoderChoice(
            name: "h264_v4l2m2m", isHardware: true, reason: "hardware H.264 encoder /dev/video11", fallback: "libx264")
        let live = try H264LiveEncoder(format: format, settings: H264Settings(), encoder: hardware)
        #expect(live.encoder.name == "libx264" && !live.encoder.isHardware)
        var keyframes: [[UInt8]] = []
        for i in 0..<6 {
            let picture = [UInt8](repeating: UInt8(i * 30), count: 64 * 48 * 2)
            let out = try live.encode(picture, at: Int64(i) * 40_000, keyframe: i == 0 || i == 4)
            keyframes += out.filter(\.isKeyframe).map(\.bytes)
        }
        #expect(keyframes.count == 2)
        for frame in keyframes {
            let types = Set(AnnexB.nalUnits(frame).map(\.type))
            #expect(types.isSuperset(of: [7, 8, 5]), "SPS, PPS and the IDR slice: \(types)")
        }
        var named = hardware
        named.fallback = nil
        #expect(throws: MovieError.self) { _ = try H264LiveEncoder(format: format, settings: H264Settings(), encoder: named) }
    }
}
