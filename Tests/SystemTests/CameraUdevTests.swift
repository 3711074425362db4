import EvcaptureTesting
import EvcaptureDaemon
import Camera
import Output
import ConfigFile
import Foundation
import LinuxIO
import Logging
import Testing
import Udev
import V4L2

/// The camera found and followed through udev's `video4linux` subsystem: enumeration with
/// udev's properties and by-id links, hotplug events from udevd and from the kernel's group,
/// and a session that sleeps on them while the camera is away.
@Suite(.needsFakeCamera, .serialized, .timeLimit(.minutes(2)))
struct CameraUdevTests {
    static let logger = Logger(label: "evcapture.tests.camera-udev")
    static let byID = CameraUVCTests.byID
    static let serial = "evcapture_project_evcapture_fake_camera_EVC0001"

    let camera: FakeCamera

    init() throws {
        camera = try FakeCamera()
    }

    @Test func discoveryListsTheCameraThroughUdevWithItsByIDIdentity() throws {
        try #require(UdevEventSource.automatic == .udev, "udevd is not running in the guest")
        let node = try camera.start()
        defer { try? camera.stop() }

        let candidates = CameraDiscovery.candidates()
        #expect(candidates.source == .udev, "\(candidates.udevProblem ?? "")")
        let listed = try #require(candidates.nodes.first { $0.path == node }, "\(candidates.nodes)")
        #expect(listed.byID == Self.byID)
        #expect(listed.index == 0)
        #expect(listed.udevCapabilities?.contains("capture") == true, "\(listed)")
        #expect(listed.name.hasPrefix(FakeCamera.cardName), "\(listed)")
        // uvcvideo's metadata node: same device, index 1, not a capture node for udev either.
        let metadata = candidates.nodes.filter { $0.path != node && $0.name == listed.name }
        #expect(metadata.count == 1 && metadata.first?.index == 1, "\(candidates.nodes)")
        #expect(metadata.first?.udevCapabilities?.contains("capture") == false, "\(metadata)")

        // The raw udev view: the properties the identity comes from.
        let devices = try UdevVideoMonitor.enumerateNow()
        let device = try #require(devices.first { $0.node == node }, "\(devices.map(\.node))")
        #expect(device.serial == Self.serial)
        #expect(device.idPath?.isEmpty == false, "\(device.properties)")
        #expect(device.links.contains(Self.byID), "\(device.links)")
        #expect(device.links.contains { $0.hasPrefix("/dev/v4l/by-path/") }, "\(device.links)")

        // Automatic discovery takes it (vivid has no zoom or exposure) with the by-id identity.
        let opened = try CameraDiscovery.open(.automatic)
        #expect(opened.device.path == node)
        #expect(opened.identity == Self.byID)
        // Named by its node, it gets the same identity.
        #expect(try CameraDiscovery.open(.path(node)).identity == Self.byID)
    }

    @Test func withoutTheCameraDiscoveryNamesWhyEachNodeWasPassedOver() throws {
        try #require(UdevEventSource.automatic == .udev, "udevd is not running in the guest")
        let vivid = try #require(vividNode(), "no vivid-000-vid-cap")
        #expect(FakeCamera.currentNode() == nil)
        do {
            let opened = try CameraDiscovery.open(.automatic)
            Issue.record("found \(opened.device.path) (\(opened.identity)) without the fake camera")
        } catch {
            #expect(error.reason == "no camera: no video capture device with zoom or exposure controls", "\(error)")
            let why = Dictionary(error.rejected.map { ($0.node, $0.why) }, uniquingKeysWith: { a, _ in a })
            #expect(why[vivid]?.hasSuffix(": no zoom or exposure controls") == true, "\(error)")
            // vivid's other video nodes (output, metadata) are passed over on udev's word,
            // without being opened.
            let byUdev = error.rejected.filter { $0.why.contains("(udev: ID_V4L_CAPABILITIES=") }
            #expect(!byUdev.isEmpty, "\(error)")
            #expect(!byUdev.contains { $0.node == vivid })
            #expect(Set(error.rejected.map(\.node)) == Set(CameraDiscovery.candidates().nodes.map(\.path)), "\(error)")
        }
    }

    @Test(arguments: [UdevEventSource.udev, .kernel])
    func videoMonitorSeesTheCameraComeAndGo(source: UdevEventSource) async throws {
        let loop = try IOLoop()
        defer { loop.stop() }
        let (monitor, stream) = try UdevVideoMonitor.start(on: loop, source: source)
        defer { monitor.stop() }
        let events = AsyncCollector(stream)
        let enumerated = await events.first { $0 == .enumerated }
        #expect(enumerated != nil, "\(events.all)")
        // Monitor first, then enumerate: vivid, present before, is listed once, before `.enumerated`.
        let vivid = try #require(vividNode())
        let before = events.all.prefix(enumerated?.index ?? 0)
        #expect(before.filter { if case .added(let d) = $0 { d.node == vivid } else { false } }.count == 1, "\(before)")

        let node = try camera.start()
        let added = await events.first(after: enumerated?.index ?? 0) {
            if case .added(let d) = $0 { d.node == node } else { false }
        }
        guard case .added(let device)? = added?.element else {
            Issue.record("no add for \(node) from \(source); got \(events.all)")
            return
        }
        #expect(device.index == 0)
        #expect(device.name?.hasPrefix(FakeCamera.cardName) == true, "\(device)")
        switch source {
        case .udev:
            // udevd announces the device after its rules ran: properties and links are there.
            #expect(device.capabilities == ["capture"], "\(device.properties)")
            #expect(device.serial == Self.serial, "\(device.properties)")
            #expect(device.byID == Self.byID, "\(device.links)")
            #expect(FileManager.default.fileExists(atPath: Self.byID), "the link exists when the event arrives")
        case .kernel:
            // The kernel's facts only: no udev properties, no links.
            #expect(device.properties["DEVNAME"] == node, "\(device.properties)")
            #expect(device.capabilities == nil && device.byID == nil, "\(device.properties)")
        }

        try camera.stop()
        let removed = await events.first(after: added?.index ?? 0) {
            if case .removed(let d) = $0 { d.node == node } else { false }
        }
        #expect(removed != nil, "no remove for \(node) from \(source); got \(events.all)")
    }

    @Test func sessionWaitsForUdevWhileTheCameraIsAwayAndResumes() async throws {
        let node = try camera.start()
        let loop = try IOLoop()
        defer { loop.stop() }
        let session = try CameraSession(.init(camera: .path(node)), loop: loop, logger: Self.logger)
        let events = AsyncCollector(session.events)
        let task = Task { await session.run() }
        defer { task.cancel() }
        let started = await events.first { if case .started = $0 { true } else { false } }
        #expect(started?.element == .started(identity: Self.byID, device: node, resumed: false), "\(events.all)")
        #expect(try session.camera.set(.zoomAbsolute, to: 345) == 345)
        #expect(camera.waitUntilReceived("zoom_absolute", 345), "\(camera.log)")

        try camera.stop()
        let stopped = await events.first { $0 == .stopped(.cameraRemoved) }
        #expect(stopped != nil, "no stopped event; got \(events.all)")
        // Let udevd finish the removal; then nothing is announced and nothing may be tried.
        _ = try? run("udevadm", "settle", "--timeout=10", timeout: .seconds(15))
        let attemptsWhileAway = session.reopenAttempts
        // At most the node on its way out, listed by the enumeration right after the removal.
        #expect(attemptsWhileAway <= 1, "reopen attempts right after the removal: \(attemptsWhileAway)")
        // Polling every 250 ms would try about 8 times here.
        try await Task.sleep(for: .seconds(2))
        #expect(session.reopenAttempts == attemptsWhileAway, "the session kept trying while the camera was away")
        #expect(!session.isRunning)

        let replugged = try camera.start()
        let resumed = await events.first(after: stopped?.index ?? 0, timeout: .seconds(30)) {
            if case .started(_, _, true) = $0 { true } else { false }
        }
        #expect(resumed?.element == .started(identity: Self.byID, device: replugged, resumed: true), "\(events.all)")
        // Found on udev's add for the capture node: one attempt (the metadata node and
        // vivid's are ruled out by udev's facts without being opened).
        #expect(session.reopenAttempts == attemptsWhileAway + 1, "attempts: \(session.reopenAttempts)")
        let restored = await events.first(after: resumed?.index ?? 0) {
            if case .restored("zoom_absolute", _, 345) = $0 { true } else { false }
        }
        #expect(restored != nil, "zoom not re-applied; got \(events.all)")
        #expect(camera.waitUntilReceived("zoom_absolute", 345), "\(camera.log)")
        #expect(try session.camera.value(of: .zoomAbsolute) == 345)
    }

    @Test func sessionResumesOnTheKernelsEventsWithoutUdevd() async throws {
        // The kernel's group announces the node before udevd made its links: the returning
        // camera is recognised by bus info and card instead.
        let node = try camera.start()
        let loop = try IOLoop()
        defer { loop.stop() }
        let session = try CameraSession(
            .init(camera: .path(Self.byID), hotplugSource: .kernel), loop: loop, logger: Self.logger)
        let events = AsyncCollector(session.events)
        let task = Task { await session.run() }
        defer { task.cancel() }
        let started = await events.first { if case .started = $0 { true } else { false } }
        #expect(started?.element == .started(identity: Self.byID, device: node, resumed: false), "\(events.all)")
        #expect(try session.camera.set(.zoomAbsolute, to: 222) == 222)

        try camera.stop()
        let stopped = await events.first { $0 == .stopped(.cameraRemoved) }
        #expect(stopped != nil, "no stopped event; got \(events.all)")
        let replugged = try camera.start()
        let resumed = await events.first(after: stopped?.index ?? 0, timeout: .seconds(30)) {
            if case .started(_, _, true) = $0 { true } else { false }
        }
        #expect(resumed?.element == .started(identity: Self.byID, device: replugged, resumed: true), "\(events.all)")
        #expect(camera.waitUntilReceived("zoom_absolute", 222), "\(camera.log)")
    }
}

/// How udev's facts about a node decide whether the session may try it as its camera: no
/// kernel needed (values as udevd and the kernel report them for the fake camera).
@Suite struct CameraUdevMatchingTests {
    static let byID = CameraUVCTests.byID

    static func udevNode(_ node: String, index: Int, capabilities: String, links: [String]) -> VideoNode {
        VideoNode(
            UdevVideoDevice(
                node: node,
                syspath: "/sys/devices/platform/dummy_hcd.0/usb1/1-1/1-1:1.0/video4linux/"
                    + node.dropFirst("/dev/".count),
                properties: ["ID_V4L_CAPABILITIES": capabilities, "DEVLINKS": links.joined(separator: " ")],
                name: "evcapture fake camera: evcaptur", index: index))
    }

    @Test func udevPropertiesBecomeTheNodesFacts() {
        let node = Self.udevNode(
            "/dev/video4", index: 0, capabilities: ":capture:",
            links: ["/dev/v4l/by-path/platform-dummy_hcd.0-usb-0:1:1.0-video-index0", Self.byID])
        #expect(node.byID == Self.byID)
        #expect(node.udevCapabilities == ["capture"])
        #expect(node.index == 0)
        #expect(node.name == "evcapture fake camera: evcaptur")
    }

    @Test func theCameraIsRecognisedByItsLinkAndOthersAreNotOpened() {
        let capture = Self.udevNode("/dev/video6", index: 0, capabilities: ":capture:", links: [Self.byID])
        #expect(CameraDiscovery.mayBe(capture, identity: Self.byID))
        // Another camera, its metadata node, an output node: ruled out on udev's word.
        let other = Self.udevNode(
            "/dev/video8", index: 0, capabilities: ":capture:", links: ["/dev/v4l/by-id/usb-Other_Cam-video-index0"])
        #expect(!CameraDiscovery.mayBe(other, identity: Self.byID, busAndCard: "usb-dummy_hcd.0-1 cam"))
        let metadata = Self.udevNode(
            "/dev/video7", index: 1, capabilities: ":", links: [Self.byID.replacingOccurrences(of: "index0", with: "index1")])
        #expect(!CameraDiscovery.mayBe(metadata, identity: Self.byID))
        let output = Self.udevNode("/dev/video9", index: 0, capabilities: ":video_output:", links: [])
        #expect(!CameraDiscovery.mayBe(output, identity: "usb-dummy_hcd.0-1 evcapture fake camera"))
    }

    @Test func aKernelAnnouncedNodeIsOpenedOnlyWhenItCanBeCheckedByBusAndCard() {
        // From the kernel's group: no udev properties, so no links and no capabilities.
        let bare = VideoNode(
            UdevVideoDevice(
                node: "/dev/video6", syspath: "/sys/devices/x/video4linux/video6", properties: ["DEVNAME": "/dev/video6"],
                name: "evcapture fake camera: evcaptur", index: 0))
        #expect(bare.byID == nil && bare.udevCapabilities == nil)
        #expect(CameraDiscovery.mayBe(bare, identity: Self.byID, busAndCard: "usb-dummy_hcd.0-1 evcapture fake camera"))
        #expect(!CameraDiscovery.mayBe(bare, identity: Self.byID, busAndCard: nil))
        // Identity by bus and card: any capture node may be it; opening tells.
        #expect(CameraDiscovery.mayBe(bare, identity: "usb-dummy_hcd.0-1 evcapture fake camera"))
    }
}
