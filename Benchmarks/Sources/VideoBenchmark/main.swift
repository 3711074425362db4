// video-benchmark [SECONDS] [ROUNDS] [WIDTHxHEIGHT...]: for each frame size (default 640×480
// and 1280×720, 30 fps):
// - the CPU time H.264 encoding takes per second of video, evcapture's writer
//   (FragmentedMP4Writer: YUYV → yuv420p with libswscale, libx264 veryfast/zerolatency
//   CRF 23, fragmented MP4) against the ffmpeg CLI with the same encoder, settings and
//   frames, in alternating rounds; medians printed;
// - the file size per minute of video of the same frames as that MP4 and as MJPEG AVI
//   (evcapture's AVIWriter, each YUYV frame JPEG-encoded at the photo quality, 90), as
//   `video-format = "avi"` records a YUYV camera.
#if canImport(Glibc)
import Glibc
#endif
import Actions
import Movie
import Vocabulary
import Recording

let arguments = Array(CommandLine.arguments.dropFirst())
let seconds = arguments.count > 0 ? Int(arguments[0]) ?? 10 : 10
let rounds = arguments.count > 1 ? Int(arguments[1]) ?? 5 : 5
let sizes: [(Int, Int)] =
    arguments.count > 2
    ? arguments[2...].compactMap { a in
        let p = a.split(separator: "x").compactMap { Int($0) }
        return p.count == 2 ? (p[0], p[1]) : nil
    } : [(640, 480), (1280, 720)]
let fps = 30
let count = seconds * fps
let dir = "/tmp/evcapture-video-benchmark-\(getpid())"
mkdir(dir, 0o755)

/// A moving test picture (a gradient sliding by 4 pixels a frame, a block crossing it): as
/// hard as a camera's scene for the encoder, and the same bytes for every contender.
func frame(_ i: Int, _ width: Int, _ height: Int) -> [UInt8] {
    var b = [UInt8](repeating: 128, count: width * height * 2)
    let side = 40 * width / 640
    for y in 0..<height {
        for x in 0..<width {
            var luma = (x + y + 4 * i) & 0xFF
            if abs(x - (i * 7 * width / 640) % width) < side && abs(y - height / 2) < side { luma = 235 }
            b[(y * width + x) * 2] = UInt8(luma)
            b[(y * width + x) * 2 + 1] = UInt8((x / 2 + i) & 0xFF)
        }
    }
    return b
}

func cpu() -> Double {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) / 1e6 + Double(u.ru_stime.tv_sec) + Double(u.ru_stime.tv_usec) / 1e6
}

func evcapture(_ frames: [[UInt8]], _ width: Int, _ height: Int) throws -> (cpu: Double, bytes: Int) {
    let path = dir + "/evcapture.mp4"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    defer { close(fd) }
    let format = StreamFormat(width: width, height: height, pixelFormat: .yuyv, bytesPerLine: width * 2, framesPerSecond: Double(fps))
    let settings = H264Settings(encoder: .named("libx264"))
    let start = cpu()
    let writer = try FragmentedMP4Writer(
        fd: fd, path: path, format: format, settings: settings, encoder: EncoderChoice.current(settings).get(), creationTime: 0)
    for (i, f) in frames.enumerated() { try writer.append(f, at: Int64(i) * 1_000_000 / Int64(fps)) }
    try writer.finish()
    let used = cpu() - start
    var st = stat()
    fstat(fd, &st)
    return (used, Int(st.st_size))
}

func ffmpeg(_ raw: String, _ width: Int, _ height: Int) -> (cpu: Double, bytes: Int) {
    let out = dir + "/ffmpeg.mp4"
    let argv = [
        "ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "yuyv422", "-s", "\(width)x\(height)", "-r", "\(fps)",
        "-i", raw, "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-crf", "23",
        "-g", "\(fps)", "-bf", "0", "-movflags", "frag_keyframe+empty_moov+default_base_moof", out,
    ]
    var pid: pid_t = 0
    let cargs = argv.map { strdup($0) } + [nil]
    defer { cargs.forEach { free($0) } }
    guard posix_spawnp(&pid, "ffmpeg", nil, nil, cargs, environ) == 0 else { return (-1, 0) }
    var status: Int32 = 0
    var usage = rusage()
    wait4(pid, &status, 0, &usage)
    var st = stat()
    stat(out, &st)
    unlink(out)
    let used =
        Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
    return (used, Int(st.st_size))
}

/// The same frames as `video-format = "avi"` writes a YUYV camera's: MJPEG in AVI.
func mjpegAVI(_ frames: [[UInt8]], _ width: Int, _ height: Int) throws -> (cpu: Double, bytes: Int) {
    let start = cpu()
    let file = try AtomicFile(directory: dir, finalName: "mjpeg.avi")
    let writer = try AVIWriter(file: file, width: width, height: height, framesPerSecond: Double(fps))
    for f in frames {
        _ = try writer.append(jpeg: try JPEG.encodeYUYV(f, width: width, height: height, bytesPerLine: width * 2, quality: 90))
    }
    let path = try writer.finish(framesPerSecond: Double(fps))
    let used = cpu() - start
    var st = stat()
    stat(path, &st)
    unlink(path)
    return (used, Int(st.st_size))
}

func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
func ms(_ s: Double) -> String { "\(Int((s * 1000).rounded())) ms" }
/// MiB per minute of video, to a tenth.
func mibPerMinute(_ bytes: Int) -> String {
    let tenths = Int((Double(bytes) / Double(seconds) * 60 / 1_048_576 * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

for (width, height) in sizes {
    let frames = (0..<count).map { frame($0, width, height) }
    let raw = dir + "/frames.yuyv"
    let rawFD = open(raw, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    for f in frames { _ = f.withUnsafeBytes { write(rawFD, $0.baseAddress, $0.count) } }
    close(rawFD)

    var ours: [Double] = [], theirs: [Double] = []
    var ourBytes = 0, theirBytes = 0
    for round in 0..<rounds {
        // Alternating which goes first, so neither always meets a warmer cache.
        let pair = round % 2 == 0 ? [true, false] : [false, true]
        for mine in pair {
            if mine {
                let r = try evcapture(frames, width, height)
                ours.append(r.cpu / Double(seconds))
                ourBytes = r.bytes
            } else {
                let r = ffmpeg(raw, width, height)
                theirs.append(r.cpu / Double(seconds))
                theirBytes = r.bytes
            }
        }
    }
    let avi = try mjpegAVI(frames, width, height)
    unlink(raw)
    unlink(dir + "/evcapture.mp4")
    print(
        "video encode, \(width)×\(height) \(fps) fps, libx264 veryfast zerolatency CRF 23, \(seconds) s × \(rounds) rounds, CPU per second of video (median):"
    )
    print("  evcapture FragmentedMP4Writer: \(ms(median(ours))) (\(ourBytes / seconds / 1024) KiB/s of video; rounds \(ours.map(ms)))")
    print(
        "  ffmpeg CLI:                    \(ms(median(theirs))) (\(theirBytes / seconds / 1024) KiB/s of video; rounds \(theirs.map(ms)))")
    print("  MJPEG AVI (quality 90):        \(ms(avi.cpu / Double(seconds))) (\(avi.bytes / seconds / 1024) KiB/s of video)")
    print(
        "figure video-encode \(width)x\(height): evcapture=\(Int((median(ours) * 1000).rounded())) ms ffmpeg=\(Int((median(theirs) * 1000).rounded())) ms per second of video"
    )
    print(
        "figure video-size \(width)x\(height): mp4=\(mibPerMinute(ourBytes)) MiB/min avi=\(mibPerMinute(avi.bytes)) MiB/min ratio=\(Int((Double(avi.bytes) / Double(max(ourBytes, 1))).rounded()))"
    )
}
rmdir(dir)
