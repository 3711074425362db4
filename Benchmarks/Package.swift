// swift-tools-version: 6.1
// A separate package so the main build stays light. Run from this directory:
//   swift run -c release capture-benchmark
import PackageDescription

let package = Package(
    name: "evcapture-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "evcapture", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // Counts every malloc/calloc/realloc/memalign of the process (interposes glibc's).
        .target(name: "MallocCounter"),
        .executableTarget(
            name: "capture-benchmark",
            dependencies: ["MallocCounter", .product(name: "EvcaptureKit", package: "evcapture")],
            path: "Sources/CaptureBenchmark"),
        // End-to-end latency on a real kernel (uinput → handler, knob step → V4L2 ioctl);
        // run in the test VM by Tests/System/bench/run.
        .executableTarget(
            name: "latency-benchmark",
            dependencies: [
                .product(name: "EvcaptureKit", package: "evcapture"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/LatencyBenchmark"),
        // H.264 encode CPU per second of video: evcapture's MP4 writer against the ffmpeg CLI
        // with the same encoder and settings on the same frames, interleaved.
        .executableTarget(
            name: "video-benchmark", dependencies: [.product(name: "EvcaptureKit", package: "evcapture")],
            path: "Sources/VideoBenchmark"),
        // A Swift program that runs one task and parks: the idle-wakeup floor.
        // `idle-floor main-thread-executor`: the same with evcapture's executor installed.
        .executableTarget(
            name: "idle-floor", dependencies: [.product(name: "ConcurrencyRuntime", package: "evcapture")],
            path: "Sources/IdleFloor"),
    ],
    swiftLanguageModes: [.v6]
)
