@testable import Camera
import Capture
import Testing

@testable import LibcameraCamera

/// Exposure bias without `ExposureValue` (docs/libcamera.md#zoom-and-exposure): libcamera's
/// `ExposureTime` and `AeEnable` offered as `exposure_time_absolute` and `auto_exposure`, so
/// the controls core's one emulation (`ExposureBiasDriver`, as for a V4L2 camera without
/// `auto_exposure_bias`) drives them. On the UVC camera's list (Fixtures/uvc-exposure-time.txt).
@Suite struct ExposureTimeEmulationTests {
    /// The fixture's controls; ExposureTime's default is the camera's (166 × 100 µs).
    static func uvc() throws -> (LibcameraControls, RecordingSink, time: UInt32, ae: UInt32) {
        var list = try PiCameraControlListTests.controls("uvc-exposure-time.txt")
        #expect(list.map(\.name) == ["AeEnable", "ExposureTime"])
        let i = try #require(list.firstIndex { $0.name == "ExposureTime" })
        list[i].defaultValue = 16600
        let sink = RecordingSink()
        let camera = LibcameraControls(identity: "uvc 046d:0825", controls: list, cropMaximum: nil, sink: sink)
        return (camera, sink, list[i].id, try #require(list.first { $0.name == "AeEnable" }).id)
    }

    @Test func offeredAsAutoExposureAndExposureTimeForTheCoresEmulation() throws {
        let (camera, _, _, _) = try Self.uvc()
        let list = try camera.controls()
        #expect(Set(list.map(\.id)) == [.exposureAuto, .exposureAbsolute])
        let time = try #require(list.first { $0.id == .exposureAbsolute })
        #expect(time.minimum == 300 && time.maximum == 204700 && time.defaultValue == 16600 && time.value == 16600)
        #expect(time.isInactive)  // auto exposure runs
        let auto = try #require(list.first { $0.id == .exposureAuto })
        #expect(auto.value == 0 && auto.menu[1] != nil)
        guard case .emulated = ExposureBiasMethod(lookup: { id in list.first { $0.id == id } }) else {
            Issue.record("not emulated")
            return
        }
        // The system slider is offered, at 0 EV.
        let slider = try Control.systemExposureBiasSlider(camera: camera)
        #expect(slider.value == 0)
    }

    @Test func biasScalesTheExposureAutoExposureChoseAndZeroGivesItBack() throws {
        let (camera, sink, time, ae) = try Self.uvc()
        sink.reportedExposureTime = 20000  // what auto exposure chose, from the frames' metadata
        var driver = ExposureBiasDriver()
        #expect(try driver.apply(1, camera: camera) == 40000)
        #expect(try camera.value(of: .exposureAuto) == 1)
        sink.reportedExposureTime = 40000  // frames now report the manual exposure
        #expect(try driver.apply(-1, camera: camera) == 10000)  // from the same base
        #expect(try driver.apply(0, camera: camera) == 20000)
        #expect(try camera.value(of: .exposureAuto) == 0)
        #expect(sink.sent == ["\(ae)=0", "\(time)=40000", "\(time)=10000", "\(time)=20000", "\(ae)=1"])
    }

    @Test func atTheEndsOfTheBiasRangeTheExposureTimeIsClampedToTheCamerasLimits() throws {
        let (camera, sink, time, _) = try Self.uvc()
        var driver = ExposureBiasDriver()
        let top = try #require(exposureBiasValues.last), bottom = try #require(exposureBiasValues.first)
        #expect(top == 2 && bottom == -2)

        sink.reportedExposureTime = 150000
        #expect(try driver.apply(top, camera: camera) == 204700)  // 600000 µs asked: the camera's maximum
        #expect(try driver.apply(0, camera: camera) == 150000)

        sink.reportedExposureTime = 1000
        #expect(try driver.apply(bottom, camera: camera) == 300)  // 250 µs asked: the camera's minimum
        #expect(try driver.apply(top, camera: camera) == 4000)  // the base is kept while biased
        #expect(try driver.apply(0, camera: camera) == 1000)
        #expect(
            sink.sent.filter { $0.hasPrefix("\(time)=") } == [
                "\(time)=204700", "\(time)=150000", "\(time)=300", "\(time)=4000", "\(time)=1000",
            ])
    }

    @Test func withoutFrameMetadataTheBaseIsTheExposureTimeHeld() throws {
        let (camera, _, _, _) = try Self.uvc()
        var driver = ExposureBiasDriver()
        #expect(try driver.apply(1, camera: camera) == 33200)  // the default, 16600 µs, doubled
        #expect(try driver.apply(0, camera: camera) == 16600)
    }

    @Test func exposureValueWinsAndHalfAPairOrAnEmptyRangeOffersNothing() throws {
        var list = try PiCameraControlListTests.controls("uvc-exposure-time.txt")
        let ev = LibcameraControl(
            id: 99, name: "ExposureValue", kind: .float, minimum: -8, maximum: 8, defaultValue: 0, minimumRect: nil,
            maximumRect: nil, values: [])
        let native = LibcameraControls(identity: "pi", controls: list + [ev], cropMaximum: nil, sink: RecordingSink())
        #expect(try native.controls().map(\.id) == [.autoExposureBias])

        let timeOnly = LibcameraControls(
            identity: "t", controls: list.filter { $0.name == "ExposureTime" }, cropMaximum: nil, sink: RecordingSink())
        #expect(try timeOnly.controls().isEmpty)
        #expect(throws: CameraError.self) { try Control.systemExposureBiasSlider(camera: timeOnly) }

        // The IMX296's ExposureTime [29..0] (Fixtures/imx296-global-shutter.txt) is no range.
        let i = try #require(list.firstIndex { $0.name == "ExposureTime" })
        (list[i].minimum, list[i].maximum) = (29, 0)
        let empty = LibcameraControls(identity: "e", controls: list, cropMaximum: nil, sink: RecordingSink())
        #expect(try empty.controls().isEmpty)
    }

    @Test func nonsenseRangesNeverCrash() throws {
        var list = try PiCameraControlListTests.controls("uvc-exposure-time.txt")
        let i = try #require(list.firstIndex { $0.name == "ExposureTime" })
        list[i].kind = .int64
        // Beyond an int32 (and an Int64): held to the int32 libcamera's ExposureTime is.
        (list[i].minimum, list[i].maximum, list[i].defaultValue) = (-1e300, 1e300, 1e300)
        let huge = try #require(
            try LibcameraControls(identity: "h", controls: list, cropMaximum: nil, sink: RecordingSink()).controls()
                .first { $0.id == .exposureAbsolute })
        #expect(huge.minimum == 1 && huge.maximum == Int64(Int32.max) && huge.defaultValue == Int64(Int32.max))
        for (low, high) in [(3e9, 4e9), (Double.nan, 5), (5, Double.infinity), (100, 100)] {
            (list[i].minimum, list[i].maximum) = (low, high)
            let camera = LibcameraControls(identity: "n", controls: list, cropMaximum: nil, sink: RecordingSink())
            #expect(try camera.controls().isEmpty, "\(low)..\(high)")
        }
    }
}
