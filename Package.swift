// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "evcapture",
    platforms: [.macOS(.v15)],
    products: [
        .library(
            name: "EvcaptureKit",
            targets: ["Vocabulary", "Capture", "Runtime", "JSON", "Roles", "Evdev", "Udev", "V4L2", "LinuxIO", "Camera", "Movie", "Frames", "Recording", "Actions", "Output", "ConfigFile", "EvcaptureDaemon", "MQTT", "Rig", "LiveView", "LiveH264", "RTSP", "WebRTC", "Booth", "OutputDevices"]),
        .executable(name: "evcapture", targets: ["evcapture"]),
        // The libcamera bridge as its own shared object, opened on first use (CLibcameraLoader,
        // docs/libcamera.md): evcapture never links libcamera.
        .library(name: "evcapture-libcamera", type: .dynamic, targets: ["CLibcameraBridge"]),
        // Swift Concurrency's global and main executors on the main thread, without libdispatch.
        .library(name: "ConcurrencyRuntime", targets: ["ConcurrencyRuntime"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // TOMLKit 0.6.0 with its toml++ parser unable to abort: Vendor/README.md
        .package(path: "Vendor/TOMLKit"),
        // The live view's HTTP server (`[http]`): HTTP/1 and TLS.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
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
        // libturbojpeg: lossless JPEG crops (digital zoom) without re-encoding.
        .systemLibrary(
            name: "CLibturbojpeg", pkgConfig: "libturbojpeg",
            providers: [.apt(["libturbojpeg0-dev"])]),
        // libexif: the EXIF block (capture time) of photos.
        .systemLibrary(
            name: "CLibexif", pkgConfig: "libexif",
            providers: [.apt(["libexif-dev"])]),
        // Debian's FFmpeg libraries (libavformat-dev, libavcodec-dev, libavutil-dev,
        // libswscale-dev): H.264 and fragmented MP4 for videos. Their headers, and the
        // libraries loaded on first use rather than linked (loader.c: the daemon that never
        // records pays nothing for them).
        .target(name: "CFFmpeg"),
        // Debian's libmosquitto: the MQTT client, driven from the daemon's epoll loop.
        .systemLibrary(
            name: "CMosquitto", pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]),
        // Debian's libgpiod (libgpiod-dev): GPIO lines through the character device, for
        // outputs. A C shim over its 1.x API (Debian 12) or its 2.x API (Debian 13), whichever
        // gpiod.h the build finds (gpiod.c says how it tells).
        .target(name: "CGPIOD", linkerSettings: [.linkedLibrary("gpiod")]),
        // What Swift cannot import: ioctl request macros, input_event time fields.
        .target(name: "CLinuxShims"),
        // libcamera (C++) through pkg-config, for CLibcameraBridge alone (docs/libcamera.md).
        .systemLibrary(
            name: "CLibcamera", pkgConfig: "libcamera",
            providers: [.apt(["libcamera-dev"])]),
        // The only importer of libcamera: its C++ API behind a plain C interface, no exception
        // crossing it. Only in the evcapture-libcamera shared object: no other target depends on it.
        // Linked by swiftc, which adds the Swift runtime and the toolchain's rpath to every
        // shared object: the bridge is C++ only, so neither is kept (a machine with the
        // release build has no libswiftCore.so).
        .target(
            name: "CLibcameraBridge", dependencies: ["CLibcamera"],
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-nostartfiles", "-no-toolchain-stdlib-rpath"])]),
        // The bridge's interface, each function forwarding to the shared object opened on first use.
        .target(name: "CLibcameraLoader"),
        // libcamera cameras for Swift: enumeration and controls, a frame stream, the backend choice.
        .target(
            name: "LibcameraCamera",
            dependencies: ["CLibcameraLoader", "Frames", "Camera", "V4L2", "Vocabulary"]),

        // Every job without an executor of its own on the main thread: no libdispatch pool,
        // so no 1 Hz pool-monitor wakeup while idle.
        .target(name: "ConcurrencyRuntime", dependencies: ["CConcurrencyHooks"]),
        // Swift's runtime hook variables, linked directly (dlsym misses them in a static build).
        .target(name: "CConcurrencyHooks"),
        // The floor every module stands on (docs/architecture.md#modules): the value types they
        // share (times and the clock, event types, codes and their kernel names, devices, frames,
        // the press and the daemon's events, the sink protocol, the one error shape), no I/O and
        // no C library.
        .target(name: "Vocabulary"),
        // Linux I/O: one thread in epoll_wait for every fd, timerfd deadlines, threads, EINTR and write helpers.
        .target(name: "LinuxIO", dependencies: ["CLinuxShims", "Vocabulary"]),
        // The only importer of CLibevdev: devices and their frames, grab, event masks, uinput, evemu files.
        .target(
            name: "Evdev",
            dependencies: ["CLibevdev", "CLinuxShims", "LinuxIO", "Vocabulary"]),
        // The only importer of CLibudev: enumerate-after-monitor, hotplug.
        .target(
            name: "Udev",
            dependencies: ["CLibudev", "LinuxIO"]),
        // V4L2 over ioctls: controls, control events, frame streaming.
        .target(
            name: "V4L2",
            dependencies: ["CLinuxShims", "LinuxIO", "Vocabulary"]),
        // Roles: what each device's codes do (capabilities, udev, config), and device pairing. Pure.
        .target(name: "Roles", dependencies: ["Vocabulary"]),
        // The pure core: press lifecycle, gestures, controls, the pipeline; typed events, no I/O, no clock.
        // Re-exports Roles (every user of the core speaks of roles).
        .target(
            name: "Capture",
            dependencies: ["Roles", "Vocabulary"]),
        // The one JSON encoder (and what JSON read back decodes into).
        .target(name: "JSON"),
        // Threads that run the core's decisions: the capture dispatcher (handlers in press
        // order), thread executors for blocking work.
        .target(name: "Runtime", dependencies: ["Capture", "LinuxIO", "Vocabulary"]),
        // Cameras: V4L2 (and simulated) cameras bound to the controls, discovery, the camera session.
        .target(
            name: "Camera",
            dependencies: ["Capture", "JSON", "V4L2", "Udev", "LinuxIO", "CLinuxShims", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        // The only importer of CFFmpeg: H.264 (hardware or software encoder) in fragmented MP4, and MP4 recovery.
        .target(name: "Movie", dependencies: ["CFFmpeg", "V4L2", "Vocabulary"]),
        // The booth's timing: countdowns, bursts, timelapse schedules, what outputs follow; pure, time passed in.
        .target(name: "Booth"),
        // The capture stream: a camera's frames (V4L2 or another library's) in a ring of recent frames, read by time.
        .target(
            name: "Frames",
            dependencies: ["V4L2", "LinuxIO", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        // Recording: frames from the ring into photo and video files (JPEG with EXIF and lossless
        // crops, MJPEG in AVI, H.264 in MP4 through Movie), recovery of cut recordings, atomic
        // files and their names.
        .target(
            name: "Recording",
            dependencies: ["Frames", "Movie", "V4L2", "LinuxIO", "CLinuxShims", "CLibjpeg", "CLibturbojpeg", "CLibexif", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        // Actions on capture events, scheduled: the runner, its queues and workers, hooks, the shutter sound, the booth's steps (the files are Recording's; the capture stream is handed to it).
        .target(
            name: "Actions",
            dependencies: ["Booth", "Runtime", "Frames", "Recording", "LinuxIO", .product(name: "Logging", package: "swift-log"), "CLinuxShims", "Vocabulary"]),
        // Typed events rendered as JSON lines and readable text; line writers, the socket, the monitor.
        .target(
            name: "Output",
            dependencies: ["Runtime", "JSON", "Camera", "LinuxIO", .product(name: "Logging", package: "swift-log"), "CLinuxShims", "Vocabulary"]),
        // The only importer of CGPIOD: LED class devices and GPIO lines following the booth's events, on a thread of their own.
        .target(
            name: "OutputDevices",
            dependencies: ["CGPIOD", "Booth", "LinuxIO", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        // The only importer of CMosquitto: an MQTT client on the IOLoop (reconnect, offline queue, will).
        .target(
            name: "MQTT",
            dependencies: ["CMosquitto", "CLinuxShims", "LinuxIO", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        // Many stations: the rig's topics, trigger messages and the fan-out of a station's presses; pure (no MQTT client, no actions).
        .target(name: "Rig", dependencies: ["JSON", "Vocabulary"]),
        // The camera's live H.264: one encode (or the camera's own H.264) shared by every viewer.
        .target(
            name: "LiveH264",
            dependencies: ["Frames", "Movie", "V4L2", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        // Debian's gst-rtsp-server, loaded on first use (rtsp.c): the RTSP server's C side.
        .target(name: "CGstRTSP"),
        // The camera's live H.264 over RTSP (`[rtsp]`).
        .target(
            name: "RTSP",
            dependencies: ["CGstRTSP", "LiveH264", "LinuxIO", .product(name: "Logging", package: "swift-log")]),
        // WebRTC viewers of the live view (`/api/whep`): webrtcbin per viewer, fed from the shared H.264.
        .target(
            name: "WebRTC",
            dependencies: ["CGstRTSP", "LiveH264", "LiveView", "LinuxIO", .product(name: "Logging", package: "swift-log")]),
        // The live view (`[http]`): the ring as MJPEG, snapshots, events as SSE, the web page; SwiftNIO.
        .target(
            name: "LiveView",
            dependencies: ["Frames", "Recording", "Output", "V4L2", "LinuxIO", .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"), "Vocabulary"]),
        // The TOML config, parsed straight into the runtime types.
        .target(
            name: "ConfigFile",
            dependencies: ["Capture", "Frames", "Recording", "Actions", "Camera", "Movie", "MQTT", "Rig", "LiveView", "RTSP", "Booth", "OutputDevices", .product(name: "TOMLKit", package: "TOMLKit"), "LinuxIO", "Vocabulary"]),
        // The daemon: devices, camera and actions composed into a service; sd_notify; the devices report; replay.
        .target(
            name: "EvcaptureDaemon",
            dependencies: ["Capture", "Runtime", "Camera", "Frames", "Recording", "Actions", "Output", "ConfigFile", "Evdev", "Udev", "LinuxIO", "MQTT", "Rig", "LiveView", "LiveH264", "RTSP", "WebRTC", "Movie", "LibcameraCamera", "OutputDevices", .product(name: "Logging", package: "swift-log"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), "CLinuxShims", "Vocabulary"]),
        .executableTarget(
            name: "evcapture",
            dependencies: ["EvcaptureDaemon", "Capture", "Camera", "Actions", "Output", "ConfigFile", "LinuxIO", "ConcurrencyRuntime", "LibcameraCamera", "Movie", .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Logging", package: "swift-log"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), "Vocabulary"]),
        // The README's library example, built with everything else (a system test runs it).
        .executableTarget(
            name: "capture-app-example", dependencies: ["Capture", "Runtime", "EvcaptureDaemon"],
            path: "Examples/CaptureApp"),
        // For tests: a manual clock, fixture paths, scenario helpers.
        .target(
            name: "EvcaptureTesting", dependencies: ["Capture", "Roles", "Evdev", "CLinuxShims", .product(name: "Logging", package: "swift-log"), "Vocabulary"],
            path: "Tests/Support"),

        .testTarget(name: "EvdevTests", dependencies: ["Evdev", "LinuxIO", "EvcaptureTesting", "Vocabulary", "CLibevdev"]),
        .testTarget(name: "LinuxIOTests", dependencies: ["LinuxIO", "CLinuxShims", "EvcaptureTesting", "Vocabulary"]),
        .testTarget(name: "FramesTests", dependencies: ["Frames", "Recording", "V4L2", "EvcaptureTesting", "Vocabulary"]),
        .testTarget(name: "OutputDevicesTests", dependencies: ["OutputDevices", "Booth", "EvcaptureTesting", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        .testTarget(name: "RolesTests", dependencies: ["Roles", "Evdev", "EvcaptureTesting", "Vocabulary"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "Evdev", "EvcaptureTesting", "Vocabulary"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "Capture", "EvcaptureTesting", "Vocabulary"]),
        .testTarget(name: "V4L2Tests", dependencies: ["V4L2", "CLinuxShims", "Vocabulary"]),
        .testTarget(name: "MovieTests", dependencies: ["Movie", "V4L2", "LinuxIO", "EvcaptureTesting", "Vocabulary"]),
        .testTarget(name: "CameraTests", dependencies: ["Camera", "Capture", "V4L2", "EvcaptureTesting", "Vocabulary"]),
        .testTarget(name: "VocabularyTests", dependencies: ["Vocabulary"]),
        .testTarget(name: "ActionsTests", dependencies: [.product(name: "Logging", package: "swift-log"), "EvcaptureTesting", "Frames", "Recording", "Actions", "V4L2", "LinuxIO", "Vocabulary"]),
        .testTarget(name: "RecordingTests", dependencies: ["Recording", "EvcaptureTesting", "Frames", "Movie", "V4L2", "CLibjpeg", "Vocabulary"]),
        .testTarget(name: "OutputTests", dependencies: ["EvcaptureTesting", "Output", "Recording", "Movie", "LinuxIO", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        .testTarget(name: "ConfigFileTests", dependencies: ["EvcaptureTesting", "ConfigFile", "Capture", "Frames", "Actions", "Camera", "Movie", "MQTT", "Rig", "LiveView", "RTSP", "Vocabulary"]),
        .testTarget(
            name: "LiveViewTests",
            dependencies: ["LiveView", "Recording", "Frames", "V4L2", "EvcaptureTesting", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        .testTarget(name: "LiveH264Tests", dependencies: ["LiveH264", "Movie"]),
        .testTarget(
            name: "RTSPTests",
            dependencies: ["RTSP", "WebRTC", "LiveView", "LiveH264", "EvcaptureTesting", "Frames", "Movie", "V4L2", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        .testTarget(name: "RigTests", dependencies: ["Rig", "MQTT", "EvcaptureTesting", "Vocabulary"]),
        // Against a real mosquitto broker on a free 127.0.0.1 port (skipped when mosquitto is not installed).
        .testTarget(name: "MQTTTests", dependencies: ["MQTT", "CMosquitto", "LinuxIO", "EvcaptureTesting", .product(name: "Logging", package: "swift-log"), "Vocabulary"]),
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "EvcaptureDaemon", "Runtime", "Camera", "Output", "ConfigFile", "Capture", "Roles", "Evdev", "EvcaptureTesting", "LinuxIO", "MQTT", "Rig", "Recording", "LiveView",
                "Vocabulary", .product(name: "Logging", package: "swift-log"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(name: "UdevTests", dependencies: ["Udev"]),
        .testTarget(name: "LibcameraCameraTests", dependencies: ["LibcameraCamera", "Camera", "V4L2", "Frames", "CLibcameraLoader", "Capture", "Vocabulary"], exclude: ["Fixtures"]),
        .testTarget(name: "BoothTests", dependencies: ["Booth", "OutputDevices", "Actions", "ConfigFile"]),
        .testTarget(name: "ConcurrencyRuntimeTests", dependencies: ["ConcurrencyRuntime"]),
        // The tests' own helpers (Tests/Support): the locator and the poll.
        .testTarget(name: "EvcaptureTestingTests", dependencies: ["EvcaptureTesting"]),
        // Needs a real kernel (uinput, V4L2): run inside the VM by Tests/System/run; skips elsewhere.
        .testTarget(
            name: "SystemTests",
            dependencies: ["EvcaptureDaemon", "Camera", "Frames", "Recording", "Actions", "Output", "ConfigFile", "Evdev", "Udev", "V4L2", "LinuxIO", "EvcaptureTesting", "LibcameraCamera", "OutputDevices", .product(name: "Logging", package: "swift-log"), "Vocabulary"],
            // The test bundle's libcamera::Camera::queueRequest and libcamera::Request::reuse,
            // exported so that the bridge calls them (Support/LibcameraStopBeforeQueueing.swift,
            // Support/LibcameraThrowingReuse.swift): a refused request, and a C++ exception on
            // libcamera's thread, on demand.
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "--export-dynamic-symbol=_ZN9libcamera6Camera12queueRequestEPNS_7RequestE",
                    "-Xlinker", "--export-dynamic-symbol=_ZN9libcamera7Request5reuseENS0_9ReuseFlagE",
                ])
            ]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
