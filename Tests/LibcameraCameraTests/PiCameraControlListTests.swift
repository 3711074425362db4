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
}
