// swift-tools-version: 6.1
// A separate package so the main build stays light. Run from this directory:
//   swift run -c release capture-benchmark
import PackageDescription

let package = Package(
    name: "evcapture-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "evcapture", path: "..")],
    targets: [
        // Counts every malloc/calloc/realloc/memalign of the process (interposes glibc's).
        .target(name: "MallocCounter"),
        .executableTarget(
            name: "capture-benchmark",
            dependencies: ["MallocCounter", .product(name: "EvcaptureKit", package: "evcapture")],
            path: "Sources/CaptureBenchmark"),
    ],
    swiftLanguageModes: [.v6]
)
