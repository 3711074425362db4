// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "evcapture",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "EvcaptureKit", targets: ["Capture", "Evdev", "Udev", "V4L2", "Bridge"]),
        .executable(name: "evcapture", targets: ["evcapture"]),
        // Swift Concurrency's global and main executors on the main thread, without libdispatch.
        .library(name: "ConcurrencyRuntime", targets: ["ConcurrencyRuntime"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // TOMLKit 0.6.0 with its toml++ parser unable to abort: Vendor/README.md
        .package(path: "Vendor/TOMLKit"),
    ],
    targets: [
        // Debian's libevdev / libudev, imported through pkg-config.
        .systemLibrary(
            name: "CLibevdev", pkgConfig: "libevdev",
            providers: [.apt(["libevdev-dev"])]),
        .systemLibrary(
            name: "CLibudev", pkgConfig: "libudev",
            providers: [.apt(["libudev-dev"])]),
        // libjpeg-turbo: YUYV frames encoded to JPEG for photos.
        .systemLibrary(
            name: "CLibjpeg", pkgConfig: "libjpeg",
            providers: [.apt(["libjpeg62-turbo-dev"])]),
        // What Swift cannot import: ioctl request macros, input_event time fields.
        .target(name: "CLinuxShims"),

        // Every job without an executor of its own on the main thread: no libdispatch pool,
        // so no 1 Hz pool-monitor wakeup while idle.
        .target(name: "ConcurrencyRuntime", dependencies: ["CConcurrencyHooks"]),
        // Swift's runtime hook variables, linked directly (dlsym misses them in a static build).
        .target(name: "CConcurrencyHooks"),
        // One thread in epoll_wait for every fd the daemon watches.
        .target(name: "IOLoop", dependencies: ["CLinuxShims"]),
        // The only importer of CLibevdev: event types and names, devices, frames, grab, uinput.
        .target(
            name: "Evdev",
            dependencies: ["CLibevdev", "CLinuxShims", "IOLoop", .product(name: "Logging", package: "swift-log")]),
        // The only importer of CLibudev: enumerate-after-monitor, hotplug.
        .target(
            name: "Udev",
            dependencies: ["CLibudev", "IOLoop", .product(name: "Logging", package: "swift-log")]),
        // Camera controls over V4L2 ioctls.
        .target(
            name: "V4L2",
            dependencies: ["CLinuxShims", "IOLoop", .product(name: "Logging", package: "swift-log")]),
        // The pure core: roles, press lifecycle, gestures, slider deltas, controls, dispatcher.
        .target(
            name: "Capture",
            dependencies: ["Evdev", .product(name: "DequeModule", package: "swift-collections")]),
        // Wiring: device watcher, camera session, actions, config, JSON stream, replay.
        .target(
            name: "Bridge",
            dependencies: [
                "Capture", "Evdev", "Udev", "V4L2", "IOLoop", "CLibjpeg",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]),
        .executableTarget(
            name: "evcapture",
            dependencies: [
                "Bridge", "Capture", "Evdev", "Udev", "V4L2", "ConcurrencyRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        .testTarget(name: "EvdevTests", dependencies: ["Evdev", "IOLoop"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "Evdev"]),
        .testTarget(name: "V4L2Tests", dependencies: ["V4L2"]),
        .testTarget(name: "UdevTests", dependencies: ["Udev"]),
        .testTarget(name: "BridgeTests", dependencies: ["Bridge", "Capture", "Evdev", "V4L2"]),
        // Needs a real kernel (uinput, V4L2): run inside the VM by Tests/System/run; skips elsewhere.
        .testTarget(name: "SystemTests", dependencies: ["Bridge", "Capture", "Evdev", "Udev", "V4L2", "IOLoop"]),
    ],
    swiftLanguageModes: [.v6]
)
