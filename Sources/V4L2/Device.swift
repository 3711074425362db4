#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims

/// What `VIDIOC_QUERYCAP` says about a device node.
public struct DeviceCapabilities: Hashable, Sendable {
    public var driver: String
    public var card: String
    public var busInfo: String
    /// `device_caps` when the driver reports them (`V4L2_CAP_DEVICE_CAPS`), else `capabilities`.
    var deviceCaps: UInt32

    public init(driver: String, card: String, busInfo: String, deviceCaps: UInt32) {
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.deviceCaps = deviceCaps
    }

    /// `V4L2_CAP_VIDEO_CAPTURE` or `V4L2_CAP_VIDEO_CAPTURE_MPLANE` on this node.
    public var canCapture: Bool { deviceCaps & (UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE)) != 0 }
}

/// An open V4L2 device node: capabilities, controls (query, menus, get, set) and control
/// events. Thread-safe: the fd never changes, and each call is one or a few ioctls that the
/// kernel serialises. The fd is closed when the object goes away.
public final class V4L2Device: Sendable {
    /// The path it was opened with.
    public let path: String
    public let capabilities: DeviceCapabilities
    let fd: Int32

    /// Opens `path` (`O_RDWR | O_NONBLOCK | O_CLOEXEC`) and asks it `VIDIOC_QUERYCAP`.
    public init(path: String) throws(V4L2Error) {
        let fd: Int32
        switch openDevice(path) {
        case .success(let f): fd = f
        case .failure(let e): throw V4L2Error(code: e.code, errno: e.errno, device: path, context: "opening it")
        }
        var cap = v4l2_capability()
        let e = queryCapabilities(fd, &cap)
        guard e == 0 else {
            close(fd)
            let code: V4L2Error.Code = e == ENOTTY || e == EINVAL ? .notV4L2 : V4L2Error.Code(errno: e)
            throw V4L2Error(code: code, errno: e, device: path, context: "VIDIOC_QUERYCAP")
        }
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        self.fd = fd
        self.path = path
        self.capabilities = DeviceCapabilities(
            driver: string(fromCArray: cap.driver), card: string(fromCArray: cap.card),
            busInfo: string(fromCArray: cap.bus_info), deviceCaps: caps)
    }

    deinit { close(fd) }

    // MARK: Query

    /// Every control the device offers, in the driver's order (class headings and disabled
    /// controls left out), with menus.
    public func controls() throws(V4L2Error) -> [ControlDescription] {
        var out: [ControlDescription] = []
        let next = UInt32(V4L2_CTRL_FLAG_NEXT_CTRL) | UInt32(V4L2_CTRL_FLAG_NEXT_COMPOUND)
        var id: UInt32 = 0
        while true {
            var q = v4l2_query_ext_ctrl()
            q.id = id | next
            let e = queryExtControl(fd, &q)
            if e == EINVAL { break }  // past the last control
            guard e == 0 else {
                throw error(e, .query, control: nil, context: "enumerating controls after \(ControlID(id))")
            }
            id = q.id
            let description = try describe(q)
            if description.type == .controlClass || description.flags.contains(.disabled) { continue }
            out.append(description)
        }
        return out
    }

    /// One control's description (fresh: flags and range as they are now).
    public func describe(_ id: ControlID) throws(V4L2Error) -> ControlDescription {
        var q = v4l2_query_ext_ctrl()
        q.id = id.rawValue
        let e = queryExtControl(fd, &q)
        guard e == 0 else { throw error(e, .query, control: id.description, context: "VIDIOC_QUERY_EXT_CTRL") }
        let description = try describe(q)
        if description.flags.contains(.disabled) {
            throw V4L2Error(code: .noSuchControl, device: path, control: description.name, context: "disabled by the driver")
        }
        return description
    }

    private func describe(_ q: v4l2_query_ext_ctrl) throws(V4L2Error) -> ControlDescription {
        var d = ControlDescription(
            id: ControlID(q.id), type: ControlType(rawValue: q.type), title: string(fromCArray: q.name),
            minimum: q.minimum, maximum: q.maximum, step: q.step, defaultValue: q.default_value,
            flags: ControlFlags(rawValue: q.flags), elements: q.elems)
        if d.type.hasMenu, d.minimum >= 0, d.maximum >= d.minimum, d.maximum - d.minimum < 4096 {
            d.menu = try menu(d)
        }
        return d
    }

    /// The entries of a menu or integer menu; indices the driver skips (EINVAL) are left out.
    private func menu(_ d: ControlDescription) throws(V4L2Error) -> [MenuEntry] {
        var entries: [MenuEntry] = []
        for index in d.minimum...d.maximum {
            switch queryMenu(fd, id: d.id.rawValue, index: UInt32(index)) {
            case .success(let (name, value)):
                entries.append(
                    d.type == .integerMenu
                        ? MenuEntry(index: index, name: String(value), value: value)
                        : MenuEntry(index: index, name: name))
            case .failure(let e) where e.errno == EINVAL:
                continue
            case .failure(let e):
                throw error(e.errno, .query, control: d.name, context: "VIDIOC_QUERYMENU index \(index)")
            }
        }
        return entries
    }

    // MARK: Values

    /// A control's current value (`VIDIOC_G_EXT_CTRLS`, `V4L2_CTRL_WHICH_CUR_VAL`).
    public func value(of id: ControlID) throws(V4L2Error) -> Int64 {
        try value(of: describe(id))
    }

    /// A control's current value, for a description already at hand.
    public func value(of d: ControlDescription) throws(V4L2Error) -> Int64 {
        guard d.hasIntegerValue else {
            throw V4L2Error(code: .unsupportedType, device: path, control: d.name, context: "reading a \(d.type) control")
        }
        if let refusal = d.flags.refusalForGet {
            throw V4L2Error(code: refusal, device: path, control: d.name, context: "reading it")
        }
        var value: Int64 = 0
        let e = getExtControl(fd, id: d.id.rawValue, is64: d.type == .integer64, value: &value)
        guard e == 0 else { throw error(e, .get, control: d.name, context: "reading it") }
        return value
    }

    /// Sets a control to `value` clamped and rounded to its step (``ControlDescription/normalize(_:)``)
    /// and returns the value it holds afterwards. The control is looked up fresh, so flags
    /// that changed a moment ago (exposure time becoming active) count. Refuses disabled,
    /// read-only, grabbed (busy) and inactive controls before any write.
    @discardableResult
    public func set(_ id: ControlID, to value: Int64) throws(V4L2Error) -> Int64 {
        let d = try describe(id)
        return try set(d, to: value)
    }

    /// ``set(_:to:)`` with a description already at hand (its flags are trusted).
    @discardableResult
    public func set(_ d: ControlDescription, to value: Int64) throws(V4L2Error) -> Int64 {
        guard d.type.isInteger, d.elements <= 1 else {
            throw V4L2Error(code: .unsupportedType, device: path, control: d.name, context: "setting a \(d.type) control")
        }
        let target = d.normalize(value)
        let what = target == value ? "setting it to \(value)" : "setting it to \(target) (asked \(value))"
        if let refusal = d.flags.refusalForSet {
            throw V4L2Error(code: refusal, device: path, control: d.name, context: what)
        }
        var held = target
        let e = setExtControl(fd, id: d.id.rawValue, is64: d.type == .integer64, value: &held)
        guard e == 0 else { throw error(e, .set, control: d.name, context: what) }
        if d.flags.contains(.writeOnly) { return target }
        // Read back: the driver may adjust further (a camera's own granularity).
        var now: Int64 = 0
        let g = getExtControl(fd, id: d.id.rawValue, is64: d.type == .integer64, value: &now)
        guard g == 0 else { throw error(g, .get, control: d.name, context: "reading it back after \(what)") }
        return now
    }

    func error(_ e: Int32, _ op: ControlOperation, control: String?, context: String) -> V4L2Error {
        V4L2Error(code: .forControl(errno: e, operation: op), errno: e, device: path, control: control, context: context)
    }
}
