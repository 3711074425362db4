import Camera
import Testing

@testable import LibcameraCamera

@Suite struct ScalerCropZoomTests {
    // A Raspberry Pi Camera Module 3's field of view (IMX708, ScalerCropMaximum).
    let maximum = SensorRect(x: 16, y: 24, width: 4608, height: 2592)

    @Test func noZoomIsTheWholeFieldOfView() {
        let zoom = ScalerCropZoom(maximum: maximum, minimumWidth: 576, minimumHeight: 324)
        #expect(zoom.zoomRange == 100...800)
        #expect(zoom.crop(zoom: 100) == maximum)
        #expect(zoom.crop(zoom: -5) == maximum)  // below the range: clamped
    }

    @Test func fullZoomIsTheSmallestCropCentredInside() {
        let zoom = ScalerCropZoom(maximum: maximum, minimumWidth: 576, minimumHeight: 324)
        let crop = zoom.crop(zoom: 800)
        #expect(crop == SensorRect(x: 16 + (4608 - 576) / 2, y: 24 + (2592 - 324) / 2, width: 576, height: 324))
        #expect(maximum.contains(crop))
        #expect(zoom.crop(zoom: 10_000) == crop)  // above the range: clamped
    }

    @Test func everyZoomStaysInsideAndCentred() {
        let zoom = ScalerCropZoom(maximum: maximum)
        #expect(zoom.zoomRange == 100...ScalerCropZoom.defaultMaximumZoom)
        var previous = maximum.width + 1
        for z in zoom.zoomRange {
            let crop = zoom.crop(zoom: z)
            #expect(maximum.contains(crop), "zoom \(z): \(crop)")
            #expect(crop.width % 2 == 0 && crop.height % 2 == 0 || z == 100)
            #expect(crop.width <= previous)
            #expect(abs((crop.x - maximum.x) * 2 + crop.width - maximum.width) <= 1)
            previous = crop.width
        }
        #expect(zoom.crop(zoom: 200).width == 2304)
    }

    @Test func aDegenerateMaximumNeverCrashes() {
        let zoom = ScalerCropZoom(maximum: SensorRect(x: 0, y: 0, width: 0, height: 0), minimumWidth: 0, minimumHeight: -3)
        #expect(zoom.zoomRange == 100...100)
        #expect(zoom.crop(zoom: Int.max) == zoom.maximum)
        let tiny = ScalerCropZoom(maximum: SensorRect(x: 0, y: 0, width: 3, height: 3))
        #expect(tiny.maximum.contains(tiny.crop(zoom: 400)))
    }
}

@Suite struct ExposureValueMappingTests {
    @Test func menuIsThirdsOfAnEVWithinTheRange() {
        let mapping = ExposureValueMapping(minimum: -8, maximum: 8)
        #expect(mapping.menu.count == 49)
        #expect(mapping.menu.first == -8000 && mapping.menu.last == 8000)
        #expect(mapping.menu.contains(0) && mapping.menu.contains(333) && mapping.menu.contains(-666))
    }

    @Test func bothEndsAndZeroMapBothWays() {
        let mapping = ExposureValueMapping(minimum: -2, maximum: 2)
        #expect(mapping.menu == [-2000, -1666, -1333, -1000, -666, -333, 0, 333, 666, 1000, 1333, 1666, 2000])
        #expect(mapping.index(ofEV: 0) == 6)
        #expect(mapping.ev(ofIndex: 6) == 0)
        #expect(mapping.ev(ofIndex: 0) == -2)
        #expect(mapping.ev(ofIndex: 12) == 2)
        #expect(mapping.ev(ofIndex: 99) == 2)  // clamped
        #expect(mapping.index(ofEV: 5) == 12)
        #expect(mapping.index(ofEV: 0.3) == 7)
    }

    @Test func nonsenseRangesNeverCrash() {
        #expect(ExposureValueMapping(minimum: .nan, maximum: .infinity).menu == [0])
        #expect(ExposureValueMapping(minimum: 3, maximum: -3).menu == [3000])
        #expect(ExposureValueMapping(minimum: 0.1, maximum: 0.2).menu == [0])
        #expect(ExposureValueMapping(minimum: 0, maximum: 0).index(ofEV: .nan) == 0)
    }
}

@Suite struct CameraBackendChoiceTests {
    @Test func autoTakesV4L2ForACameraThatStreamsOnItsOwn() {
        #expect(CameraBackendSetting.auto.backend(streamsOnItsOwn: true, libcameraAvailable: true) == .v4l2)
        #expect(CameraBackendSetting.auto.backend(streamsOnItsOwn: false, libcameraAvailable: true) == .libcamera)
    }

    @Test func anExplicitChoiceIsKept() {
        #expect(CameraBackendSetting.libcamera.backend(streamsOnItsOwn: true, libcameraAvailable: true) == .libcamera)
        #expect(CameraBackendSetting.v4l2.backend(streamsOnItsOwn: false, libcameraAvailable: true) == .v4l2)
    }

    @Test func withoutLibcameraV4L2GoesOn() {
        for setting in CameraBackendSetting.allCases {
            #expect(setting.backend(streamsOnItsOwn: false, libcameraAvailable: false) == .v4l2)
        }
    }

    @Test func fourccsAndNames() {
        #expect(fourcc("MJPG") == 0x4750_4A4D)
        #expect(fourccName(fourcc("YUYV")) == "YUYV")
        #expect(fourccName(0) == "0x0")
    }
}

/// What the controls backend sent, in order.
final class RecordingSink: LibcameraControlSink, @unchecked Sendable {
    // @unchecked: tests call it from one task at a time.
    var sent: [String] = []
    func set(_ id: UInt32, float value: Float) throws(LibcameraError) { sent.append("\(id)=\(value)") }
    func set(_ id: UInt32, rectangle value: SensorRect) throws(LibcameraError) { sent.append("\(id)=\(value)") }
    func set(_ id: UInt32, integer value: Int64) throws(LibcameraError) { sent.append("\(id)=\(value)") }
    /// What the latest frame's metadata said (`ExposureTime`, µs).
    var reportedExposureTime: Int64?
}

@Suite struct LibcameraControlsTests {
    static let crop = LibcameraControl(
        id: 7, name: "ScalerCrop", kind: .rectangle, minimum: 0, maximum: 0, defaultValue: 0,
        minimumRect: SensorRect(x: 0, y: 0, width: 1152, height: 648), maximumRect: nil, values: [])
    static let ev = LibcameraControl(
        id: 9, name: "ExposureValue", kind: .float, minimum: -1, maximum: 1, defaultValue: 0, minimumRect: nil,
        maximumRect: nil, values: [])
    static let maximum = SensorRect(x: 0, y: 0, width: 4608, height: 2592)

    @Test func zoomAndExposureBecomeScalerCropAndExposureValue() throws {
        let sink = RecordingSink()
        let camera = LibcameraControls(identity: "imx708", controls: [Self.crop, Self.ev], cropMaximum: Self.maximum, sink: sink)
        let list = try camera.controls()
        let zoom = try #require(list.first { $0.id == .zoomAbsolute })
        #expect(zoom.minimum == 100 && zoom.maximum == 400 && zoom.value == 100)
        let bias = try #require(list.first { $0.id == .autoExposureBias })
        #expect(bias.kind == .integerMenu && bias.maximum == 6 && bias.value == 3 && bias.menu[0] == "-1000")

        #expect(try camera.set(.zoomAbsolute, to: 400) == 400)
        #expect(try camera.set(.zoomAbsolute, to: 9999) == 400)  // clamped
        #expect(try camera.set(.zoomAbsolute, to: 100) == 100)
        #expect(try camera.set(.autoExposureBias, to: 6) == 6)
        #expect(try camera.value(of: .autoExposureBias) == 6)
        #expect(sink.sent == ["7=1152x648@(1728,972)", "7=1152x648@(1728,972)", "7=4608x2592@(0,0)", "9=1.0"])
    }

    @Test func aCameraWithoutThemOffersNothing() throws {
        let camera = LibcameraControls(identity: "uvc", controls: [Self.crop], cropMaximum: nil, sink: RecordingSink())
        #expect(try camera.controls().isEmpty)
        #expect(throws: CameraError.self) { try camera.set(.zoomAbsolute, to: 200) }
        #expect(throws: CameraError.self) { try camera.value(of: .zoomAbsolute) }
    }
}
