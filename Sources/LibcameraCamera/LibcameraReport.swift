/// What `evcapture controls` shows of libcamera: its cameras, their formats and the
/// controls this program uses (docs/libcamera.md).
public enum LibcameraReport {
    /// The controls the libcamera backend reads or drives, by libcamera's names.
    static let usedControls: Set<String> = ["ScalerCrop", "ExposureValue", "ExposureTime", "AeEnable", "AfMode", "AfTrigger"]

    /// The readable section: one line when libcamera cannot start.
    public static func text(_ libcamera: Result<Libcamera, LibcameraError>) -> String {
        switch libcamera {
        case .failure(let error):
            return "libcamera: not available (\(error)); V4L2 cameras only"
        case .success(let lc):
            let cameras = lc.cameras()
            var lines = [
                "libcamera \(lc.version) (built against \(Libcamera.compiledVersion)): "
                    + (cameras.count == 1 ? "1 camera" : "\(cameras.count) cameras")
            ]
            for camera in cameras {
                lines.append(contentsOf: describe(camera, in: lc))
            }
            return lines.joined(separator: "\n")
        }
    }

    static func describe(_ camera: LibcameraCameraInfo, in lc: Libcamera) -> [String] {
        let kind = camera.isUVC ? "UVC, V4L2 streams it on its own" : "libcamera pipeline"
        var lines = ["  \(camera.id): \(camera.model.isEmpty ? "(no model)" : camera.model) (\(kind))"]
        if let maximum = camera.scalerCropMaximum {
            lines.append("    ScalerCropMaximum: \(maximum)")
        }
        do {
            let formats = try lc.formats(of: camera.id)
            let names = formats.map { "\($0.name) \($0.width)x\($0.height)" }
            lines.append("    formats: " + (names.isEmpty ? "none" : names.joined(separator: ", ")))
            if let main = LibcameraFrameStream.choose(formats, width: nil, height: nil) {
                lines.append(
                    "    \(liveViewLine(main: main, preview: lc.liveViewStream(of: camera.id, plan: LibcameraStreamPlan(main: main, liveViewWidth: 640))))"
                )
            }
        } catch {
            lines.append("    formats: \(error)")
        }
        do {
            let controls = try lc.controls(of: camera.id).sorted { $0.name < $1.name }
            if controls.isEmpty { lines.append("    controls: none") }
            for control in controls {
                let used = usedControls.contains(control.name) ? " *" : ""
                lines.append("    \(control.name): \(range(of: control))\(used)")
            }
        } catch {
            lines.append("    controls: \(error)")
        }
        return lines
    }

    /// The two-stream line: with the default capture stream (`main`) and the live view's
    /// default `preview-width` (640), where the live view's frames come from.
    static func liveViewLine(main: LibcameraFormat, preview: LiveViewStream) -> String {
        "at \(main.name) \(main.width)x\(main.height) and preview-width 640, \(preview)"
    }

    /// A control's range as text (`-8...8, default 0`, `{0, 1, 2}`).
    static func range(of control: LibcameraControl) -> String {
        switch control.kind {
        case .rectangle:
            return "\(control.minimumRect.map(\.description) ?? "?")...\(control.maximumRect.map(\.description) ?? "?")"
        case .bool, .byte, .int32, .int64, .float:
            if !control.values.isEmpty, control.kind != .float {
                return "{" + control.values.map(String.init).joined(separator: ", ") + "}, default \(number(control.defaultValue))"
            }
            return "\(number(control.minimum))...\(number(control.maximum)), default \(number(control.defaultValue))"
        default:
            return "(\(control.kind))"
        }
    }

    static func number(_ value: Double) -> String {
        value.isFinite && value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
