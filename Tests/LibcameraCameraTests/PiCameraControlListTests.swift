import Camera
import Foundation
import Testing

@testable import LibcameraCamera

/// The control mapping (docs/libcamera.md#zoom-and-exposure) on the control list of a real
/// Raspberry Pi camera, as libcamera on Raspberry Pi OS published it (Fixtures/).
@Suite struct PiCameraControlListTests {
    /// `Name : [min..max]` lines of `--list-cameras -v` as libcamera controls (ids in order).
    static func controls(_ fixture: String) throws -> [LibcameraControl] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(fixture)").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var out: [LibcameraControl] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.trimmingCharacters(in: .whitespaces).components(separatedBy: " : [")
            guard parts.count == 2, parts[1].hasSuffix("]"), let name = parts.first, !name.contains(" ") else { continue }
            let range = parts[1].dropLast().components(separatedBy: "..")
            guard range.count == 2 else { continue }
            var c = LibcameraControl(
                id: UInt32(out.count + 1), name: name, kind: .int32, minimum: 0, maximum: 0, defaultValue: 0, minimumRect: nil,
                maximumRect: nil, values: [])
            if range[0] == "false" {
                c.kind = .bool
                c.maximum = 1
            } else if let low = rect(range[0]), let high = rect(range[1]) {
                c.kind = .rectangle
                (c.minimumRect, c.maximumRect) = (low, high)
            } else {
                c.kind = range[0].contains(".") ? .float : .int32
                c.minimum = try #require(Double(range[0]), "\(line)")
                c.maximum = try #require(Double(range[1]), "\(line)")
            }
            out.append(c)
        }
        return out
    }

    /// `(x, y)/WxH`
    static func rect(_ s: String) -> SensorRect? {
        let halves = s.components(separatedBy: ")/")
        guard halves.count == 2, halves[0].hasPrefix("(") else { return nil }
        let xy = halves[0].dropFirst().components(separatedBy: ", ").compactMap { Int($0) }
        let wh = halves[1].components(separatedBy: "x").compactMap { Int($0) }
        guard xy.count == 2, wh.count == 2 else { return nil }
        return SensorRect(x: xy[0], y: xy[1], width: wh[0], height: wh[1])
    }

    @Test func theGlobalShutterCameraZoomsByScalerCropAndBiasesByExposureValue() throws {
        let list = try Self.controls("imx296-global-shutter.txt")
        #expect(list.count == 21)
        let crop = try #require(list.first { $0.name == "ScalerCrop" })
        let maximum = try #require(crop.maximumRect)
        #expect(maximum == SensorRect(x: 0, y: 0, width: 1456, height: 1088))
        let camera = LibcameraControls(identity: "imx296", controls: list, cropMaximum: maximum, sink: RecordingSink())
        let offered = try camera.controls()
        #expect(Set(offered.map(\.id)) == [.zoomAbsolute, .autoExposureBias])

        // Zoom: the whole sensor at 100, the smallest crop the camera allows (64×64) at the top.
        let zoom = try #require(offered.first { $0.id == .zoomAbsolute })
        let geometry = ScalerCropZoom(maximum: maximum, minimumWidth: 64, minimumHeight: 64)
        #expect(zoom.minimum == 100 && zoom.maximum == Int64(geometry.zoomRange.upperBound) && zoom.maximum > 100)
        #expect(geometry.crop(zoom: 100) == maximum)
        let tightest = geometry.crop(zoom: geometry.zoomRange.upperBound)
        #expect(maximum.contains(tightest) && tightest.width >= 64 && tightest.height >= 64, "\(tightest)")
        #expect(tightest.width == 64 || tightest.height == 64, "the top of the range is where a side reaches the minimum: \(tightest)")
        let beyond = ScalerCropZoom(maximum: maximum).crop(zoom: geometry.zoomRange.upperBound + 100)
        #expect(maximum.contains(beyond))

        // Exposure bias: ExposureValue's ±8 EV as thirds of an EV, 0 in the middle.
        let bias = try #require(offered.first { $0.id == .autoExposureBias })
        #expect(bias.kind == .integerMenu && bias.maximum == 48 && bias.value == 24)
        #expect(bias.menu[0] == "-8000" && bias.menu[24] == "0" && bias.menu[48] == "8000")

        // No lens to focus: `began` starts no autofocus cycle on it.
        #expect(!LibcameraLiveControls(controls: list).hasAutofocus)
        #expect(try Self.sentAtBegan(list).isEmpty)
        // The same list with a Camera Module 3's AfMode (Manual, Auto, Continuous) and AfTrigger would.
        var withFocus = list
        withFocus.append(
            LibcameraControl(
                id: 90, name: "AfMode", kind: .int32, minimum: 0, maximum: 2, defaultValue: 0, minimumRect: nil, maximumRect: nil,
                values: [0, 1, 2]))
        withFocus.append(
            LibcameraControl(
                id: 91, name: "AfTrigger", kind: .int32, minimum: 0, maximum: 1, defaultValue: 0, minimumRect: nil, maximumRect: nil,
                values: [0, 1]))
        #expect(LibcameraLiveControls(controls: withFocus).hasAutofocus)
        // An AfMode without Auto (a fixed-focus module that lists Manual only) does not.
        withFocus[withFocus.count - 2].values = [0]
        #expect(!LibcameraLiveControls(controls: withFocus).hasAutofocus)
    }

    /// What a press's `began` puts on the running stream's next request (the daemon calls
    /// ``LibcameraLiveControls/startAutofocus()`` then), with a recorder as the stream.
    static func sentAtBegan(_ list: [LibcameraControl]) throws -> [String] {
        let live = LibcameraLiveControls(controls: list)
        let stream = RecordingSink()
        live.attach(stream)
        #expect(live.startAutofocus() == live.hasAutofocus)
        return stream.sent
    }

    /// The mapping on a Pi camera's list: zoom on `ScalerCrop` from 1× (the whole maximum) to
    /// `tightest` (centred, the smallest crop the camera takes on one side) at `topZoom`, and
    /// the exposure bias on `ExposureValue`'s -8…+8 EV at both ends and in the middle.
    /// The lists carry no `ScalerCropMaximum` property: the `ScalerCrop` control's maximum,
    /// the full-resolution mode's crop, stands for it.
    static func checkZoomAndBias(
        _ list: [LibcameraControl], identity: String, maximum: SensorRect, minimumCrop: (width: Int, height: Int),
        topZoom: Int64, tightest: SensorRect
    ) throws {
        let crop = try #require(list.first { $0.name == "ScalerCrop" })
        #expect(crop.maximumRect == maximum)
        #expect(crop.minimumRect?.width == minimumCrop.width && crop.minimumRect?.height == minimumCrop.height)
        let ev = try #require(list.first { $0.name == "ExposureValue" })
        let sink = RecordingSink()
        let camera = LibcameraControls(identity: identity, controls: list, cropMaximum: maximum, sink: sink)
        let offered = try camera.controls()
        // ExposureValue is there, so ExposureTime/AeEnable are not offered for an emulated bias.
        #expect(Set(offered.map(\.id)) == [.zoomAbsolute, .autoExposureBias])

        let zoom = try #require(offered.first { $0.id == .zoomAbsolute })
        #expect(zoom.minimum == 100 && zoom.maximum == topZoom && zoom.value == 100)
        #expect(try camera.set(.zoomAbsolute, to: topZoom) == topZoom)
        #expect(try camera.set(.zoomAbsolute, to: topZoom + 1000) == topZoom)  // clamped to the top
        #expect(try camera.set(.zoomAbsolute, to: 100) == 100)
        #expect(try camera.set(.zoomAbsolute, to: 0) == 100)  // clamped to 1×
        #expect(sink.sent == ["\(crop.id)=\(tightest)", "\(crop.id)=\(tightest)", "\(crop.id)=\(maximum)", "\(crop.id)=\(maximum)"])
        #expect(maximum.contains(tightest))
        #expect(tightest.width >= minimumCrop.width && tightest.height >= minimumCrop.height)
        #expect(tightest.width == minimumCrop.width || tightest.height == minimumCrop.height, "\(tightest)")
        #expect(abs(2 * (tightest.x - maximum.x) + tightest.width - maximum.width) <= 1, "centred across: \(tightest)")
        #expect(abs(2 * (tightest.y - maximum.y) + tightest.height - maximum.height) <= 1, "centred down: \(tightest)")

        // Exposure bias: -8 EV at index 0, +8 EV at 48, 0 EV (the default) at 24.
        let bias = try #require(offered.first { $0.id == .autoExposureBias })
        #expect(bias.kind == .integerMenu && bias.minimum == 0 && bias.maximum == 48 && bias.value == 24)
        #expect(bias.menu[0] == "-8000" && bias.menu[24] == "0" && bias.menu[48] == "8000")
        sink.sent = []
        #expect(try camera.set(.autoExposureBias, to: 0) == 0)
        #expect(try camera.set(.autoExposureBias, to: 48) == 48)
        #expect(try camera.set(.autoExposureBias, to: 99) == 48)  // clamped
        #expect(try camera.set(.autoExposureBias, to: 24) == 24)
        #expect(sink.sent == ["\(ev.id)=-8.0", "\(ev.id)=8.0", "\(ev.id)=8.0", "\(ev.id)=0.0"])
    }

    @Test func theCameraModule3sSensorFocusesAtBeganAndZoomsByScalerCrop() throws {
        // An IMX708 on a Pi 5 (Fixtures/imx708-arducam-pi5.txt): the smallest crop is 51×39.
        let list = try Self.controls("imx708-arducam-pi5.txt")
        #expect(list.count == 35)
        let mode = try #require(list.first { $0.name == "AfMode" })
        let trigger = try #require(list.first { $0.name == "AfTrigger" })
        #expect(mode.minimum == 0 && mode.maximum == 2 && trigger.minimum == 0 && trigger.maximum == 1)
        // `began` starts a cycle: AfMode Auto (1), then AfTrigger Start (0), on the next request.
        #expect(try Self.sentAtBegan(list) == ["\(mode.id)=1", "\(trigger.id)=0"])
        // 4608/51 and 2592/39: the height runs out first, at 66.46×.
        try Self.checkZoomAndBias(
            list, identity: "imx708", maximum: SensorRect(x: 0, y: 0, width: 4608, height: 2592), minimumCrop: (51, 39),
            topZoom: 6646, tightest: SensorRect(x: 2270, y: 1276, width: 68, height: 39))
    }

    @Test func aCameraModule3sPublishedControlsFocusAtBeganAndZoomByScalerCrop() throws {
        // A Camera Module 3 on an older libcamera (Fixtures/imx708-camera-module-3-partial.txt,
        // the first 19 controls only): the smallest crop is 128×128.
        let list = try Self.controls("imx708-camera-module-3-partial.txt")
        #expect(list.count == 19)
        let mode = try #require(list.first { $0.name == "AfMode" })
        let trigger = try #require(list.first { $0.name == "AfTrigger" })
        #expect(try Self.sentAtBegan(list) == ["\(mode.id)=1", "\(trigger.id)=0"])
        // 4608/128 and 2592/128: the height runs out first, at 20.25×.
        try Self.checkZoomAndBias(
            list, identity: "imx708", maximum: SensorRect(x: 0, y: 0, width: 4608, height: 2592), minimumCrop: (128, 128),
            topZoom: 2025, tightest: SensorRect(x: 2191, y: 1232, width: 226, height: 128))
    }

    @Test func theHQCameraHasNoAutofocusAndZoomsByScalerCrop() throws {
        let list = try Self.controls("imx477-hq.txt")
        #expect(list.count == 28)
        #expect(!list.contains { $0.name.hasPrefix("Af") || $0.name == "LensPosition" })
        // No lens the camera drives: `began` sends nothing.
        #expect(!LibcameraLiveControls(controls: list).hasAutofocus)
        #expect(try Self.sentAtBegan(list).isEmpty)
        // 4056/64 and 3040/64: the height runs out first, at 47.5×.
        try Self.checkZoomAndBias(
            list, identity: "imx477", maximum: SensorRect(x: 0, y: 0, width: 4056, height: 3040), minimumCrop: (64, 64),
            topZoom: 4750, tightest: SensorRect(x: 1986, y: 1488, width: 84, height: 64))
    }
}
