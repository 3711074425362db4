import CLibcameraLoader

/// Why a libcamera call failed: libcamera's negative errno (or -1) and its message.
public struct LibcameraError: Error, Sendable, CustomStringConvertible {
    public var code: Int32
    public var message: String
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }
    init(_ error: evc_lc_error) {
        self.init(code: error.code, message: cString(error.message))
    }
    public var description: String { message.isEmpty ? "libcamera error \(code)" : message }
}

/// One camera libcamera lists.
public struct LibcameraCameraInfo: Sendable, Hashable {
    /// libcamera's camera id (what `[camera] libcamera-camera` names).
    public var id: String
    /// `properties::Model`; "" when the camera does not say.
    public var model: String
    /// `properties::Location`: 0 front, 1 back, 2 external; nil when absent.
    public var location: Int?
    /// Driven by libcamera's UVC pipeline handler: a USB webcam, which V4L2 streams on its own.
    public var isUVC: Bool
    /// `properties::ScalerCropMaximum`, when the camera has one.
    public var scalerCropMaximum: SensorRect?
}

/// One libcamera control with its range (`Camera::controls()`).
public struct LibcameraControl: Sendable, Hashable {
    public enum Kind: Int32, Sendable, Hashable {
        case none = 0, bool, byte, int32, int64, float, string, rectangle, size
        case other = 99
    }
    public var id: UInt32
    public var name: String
    public var kind: Kind
    /// Numeric kinds.
    public var minimum: Double
    public var maximum: Double
    public var defaultValue: Double
    /// Rectangle kinds (`ScalerCrop`).
    var minimumRect: SensorRect?
    var maximumRect: SensorRect?
    /// The values of an enumerated control (`AfMode`).
    public var values: [Int32]
}

/// A pixel format and size a camera offers for video.
public struct LibcameraFormat: Sendable, Hashable {
    public var fourcc: UInt32
    public var width: Int
    public var height: Int
    public init(fourcc: UInt32, width: Int, height: Int) {
        self.fourcc = fourcc
        self.width = width
        self.height = height
    }
    /// The fourcc as text (`MJPG`, `YUYV`).
    public var name: String { fourccName(fourcc) }
}

/// The fourcc of four ASCII characters (`MJPG`).
public func fourcc(_ text: StaticString) -> UInt32 {
    precondition(text.utf8CodeUnitCount == 4)
    let b = text.utf8Start
    return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
}

func fourccName(_ code: UInt32) -> String {
    let bytes = (0..<4).map { UInt8(truncatingIfNeeded: code >> ($0 * 8)) }
    return bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) ? String(decoding: bytes, as: UTF8.self) : "0x\(String(code, radix: 16))"
}

/// A C char array (imported as a tuple) as a String, up to its NUL.
func cString<T>(_ tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        let bytes = raw.prefix(while: { $0 != 0 })
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension SensorRect {
    init(_ r: evc_lc_rect) { self.init(x: Int(r.x), y: Int(r.y), width: Int(r.width), height: Int(r.height)) }
    var c: evc_lc_rect {
        evc_lc_rect(
            x: Int32(clamping: x), y: Int32(clamping: y), width: UInt32(clamping: max(0, width)),
            height: UInt32(clamping: max(0, height)))
    }
}

/// libcamera's camera manager: the cameras it finds, their controls and properties. One
/// per process (libcamera's rule); ``Libcamera/start()`` fails on a second.
public final class Libcamera: @unchecked Sendable {
    // @unchecked: `manager` and `changes` are set once in init and freed once in deinit;
    // libcamera's CameraManager is safe to query from any thread.
    let manager: OpaquePointer

    /// The libcamera version the bridge was compiled against; "unknown" when the bridge cannot be loaded.
    public static var compiledVersion: String {
        guard loadBridge() == nil else { return "unknown" }
        return String(cString: evc_lc_compiled_version())
    }

    /// Opens the bridge (libevcapture-libcamera.so, and with it libcamera) on first use: nil,
    /// or why it cannot be used, as one line (docs/libcamera.md, "Loading").
    static func loadBridge() -> LibcameraError? {
        var buffer = [CChar](repeating: 0, count: 512)
        guard evc_lc_load(&buffer, buffer.count) != 0 else { return nil }
        return LibcameraError(code: -2, message: buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
    }

    /// Whether the shared object at `path` is a bridge this program could load: nil, or why not.
    static func checkBridge(at path: String) -> LibcameraError? {
        var buffer = [CChar](repeating: 0, count: 512)
        guard evc_lc_check_bridge(path, &buffer, buffer.count) != 0 else { return nil }
        return LibcameraError(code: -2, message: buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
    }

    /// Loads the bridge and starts libcamera's camera manager; the error is one line to show
    /// as it is. `onCameraChange` gets each camera that appears (true) or goes away (false),
    /// by id, on libcamera's thread.
    public static func start(onCameraChange: (@Sendable (String, Bool) -> Void)? = nil) -> Result<Libcamera, LibcameraError> {
        if let error = loadBridge() { return .failure(error) }
        var error = evc_lc_error()
        let box = onCameraChange.map { Unmanaged.passRetained(CameraChangeBox($0)) }
        let callback: evc_lc_hotplug_callback? =
            box == nil
            ? nil
            : { context, id, added in
                guard let context, let id else { return }
                Unmanaged<CameraChangeBox>.fromOpaque(context).takeUnretainedValue().handler(String(cString: id), added != 0)
            }
        guard let manager = evc_lc_manager_start(callback, box?.toOpaque(), &error) else {
            box?.release()
            return .failure(LibcameraError(error))
        }
        return .success(Libcamera(manager, box))
    }

    final class CameraChangeBox {
        let handler: @Sendable (String, Bool) -> Void
        init(_ handler: @escaping @Sendable (String, Bool) -> Void) { self.handler = handler }
    }
    private let changes: Unmanaged<CameraChangeBox>?

    private init(_ manager: OpaquePointer, _ changes: Unmanaged<CameraChangeBox>?) {
        self.manager = manager
        self.changes = changes
    }

    deinit {
        // No callback after the manager stopped.
        evc_lc_manager_stop(manager)
        changes?.release()
    }

    /// The running library's version ("v0.0.3").
    public var version: String { String(cString: evc_lc_manager_version(manager)) }

    /// Every camera libcamera drives now.
    public func cameras() -> [LibcameraCameraInfo] {
        var capacity = 8
        while true {
            var infos = [evc_lc_camera_info](repeating: evc_lc_camera_info(), count: capacity)
            let count = evc_lc_cameras(manager, &infos, capacity)
            if count > capacity {
                capacity = count
                continue
            }
            return infos.prefix(count).map { info in
                LibcameraCameraInfo(
                    id: cString(info.id), model: cString(info.model),
                    location: info.location < 0 ? nil : Int(info.location), isUVC: info.is_uvc != 0,
                    scalerCropMaximum: info.has_scaler_crop_maximum != 0 ? SensorRect(info.scaler_crop_maximum) : nil)
            }
        }
    }

    /// The controls of camera `id`.
    public func controls(of id: String) throws(LibcameraError) -> [LibcameraControl] {
        var capacity = 64
        var error = evc_lc_error()
        while true {
            var list = [evc_lc_control](repeating: evc_lc_control(), count: capacity)
            var count = 0
            guard evc_lc_camera_controls(manager, id, &list, capacity, &count, &error) == 0 else {
                throw LibcameraError(error)
            }
            if count > capacity {
                capacity = count
                continue
            }
            return list.prefix(count).map { c in
                let kind = LibcameraControl.Kind(rawValue: Int32(c.type)) ?? .other
                let values = withUnsafeBytes(of: c.values) { Array($0.bindMemory(to: Int32.self).prefix(Int(c.value_count))) }
                return LibcameraControl(
                    id: c.id, name: cString(c.name), kind: kind, minimum: c.minimum, maximum: c.maximum,
                    defaultValue: c.default_value,
                    minimumRect: kind == .rectangle ? SensorRect(c.minimum_rect) : nil,
                    maximumRect: kind == .rectangle ? SensorRect(c.maximum_rect) : nil, values: values)
            }
        }
    }

    /// The properties of camera `id` as `Name = value` lines.
    public func properties(of id: String) throws(LibcameraError) -> [String] {
        var buffer = [CChar](repeating: 0, count: 8192)
        var error = evc_lc_error()
        guard evc_lc_camera_properties(manager, id, &buffer, buffer.count, &error) == 0 else { throw LibcameraError(error) }
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return text.split(separator: "\n").map(String.init)
    }

    /// The video formats and sizes camera `id` offers.
    public func formats(of id: String) throws(LibcameraError) -> [LibcameraFormat] {
        var capacity = 64
        var error = evc_lc_error()
        while true {
            var list = [evc_lc_format](repeating: evc_lc_format(), count: capacity)
            var count = 0
            guard evc_lc_camera_formats(manager, id, &list, capacity, &count, &error) == 0 else {
                throw LibcameraError(error)
            }
            if count > capacity {
                capacity = count
                continue
            }
            return list.prefix(count).map { LibcameraFormat(fourcc: $0.fourcc, width: Int($0.width), height: Int($0.height)) }
        }
    }
}
