// swift-tools-version: 6.1
// libFuzzer harnesses for evcapture's parsers (config TOML, evemu recordings, the live view's requests). A separate
// package: it is built with -sanitize=fuzzer, which the main build must never see.
// Build and run with Tests/Fuzz/run (see README.md there).
import PackageDescription

let package = Package(
    name: "evcapture-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "evcapture", path: "../.."),
        // NIOEmbedded, for the request path on an EmbeddedChannel (the version evcapture uses).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // Declares libFuzzer's LLVMFuzzerRunDriver: SwiftPM gives executables their own main.
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "fuzz-config", dependencies: ["FuzzDriver", .product(name: "EvcaptureKit", package: "evcapture")],
            path: "Sources/FuzzConfig"),
        .executableTarget(
            name: "fuzz-evemu", dependencies: ["FuzzDriver", .product(name: "EvcaptureKit", package: "evcapture")],
            path: "Sources/FuzzEvemu"),
        .executableTarget(
            name: "fuzz-http",
            dependencies: [
                "FuzzDriver", .product(name: "EvcaptureKit", package: "evcapture"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Sources/FuzzHTTP"),
    ],
    swiftLanguageModes: [.v6]
)
