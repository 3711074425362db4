// swift-tools-version: 6.1
// libFuzzer harnesses for evcapture's parsers (config TOML, evemu recordings). A separate
// package: it is built with -sanitize=fuzzer, which the main build must never see.
// Build and run with Tests/Fuzz/run (see README.md there).
import PackageDescription

let package = Package(
    name: "evcapture-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "evcapture", path: "../..")],
    targets: [
        .executableTarget(
            name: "fuzz-config", dependencies: [.product(name: "EvcaptureKit", package: "evcapture")],
            path: "Sources/FuzzConfig"),
        .executableTarget(
            name: "fuzz-evemu", dependencies: [.product(name: "EvcaptureKit", package: "evcapture")],
            path: "Sources/FuzzEvemu"),
    ],
    swiftLanguageModes: [.v6]
)
