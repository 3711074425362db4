#if canImport(Glibc)
import Glibc
#endif
import CLinuxShims
import LinuxIO

// One thin function per system call. Each returns the errno instead of throwing, so the
// caller (which knows the device and the control) builds the error once; EINTR is retried
// by LinuxIO's ``retryingEINTR(_:)``.

/// Runs `body` (retrying EINTR). Returns 0 or the errno.
@inline(__always)
func errnoOf(_ body: () -> Int32) -> Int32 {
    do {
        _ = try retryingEINTR(body)
        return 0
    } catch {
        return error.errno
    }
}

/// `ioctl(fd, request, arg)`: 0 or the errno.
func v4l2Ioctl(_ fd: Int32, _ request: UInt, _ arg: UnsafeMutableRawPointer) -> Int32 {
    errnoOf { evc_ioctl(fd, request, arg) }
}

/// `open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)`: the fd or the errno.
func openDevice(_ path: String) -> Result<Int32, SystemError> {
    var fd: Int32 = -1
    let e = errnoOf {
        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        return fd
    }
    return e == 0 ? .success(fd) : .failure(SystemError(errno: e))
}

/// `VIDIOC_QUERYCAP`.
func queryCapabilities(_ fd: Int32, _ cap: inout v4l2_capability) -> Int32 {
    v4l2Ioctl(fd, EVC_VIDIOC_QUERYCAP, &cap)
}

/// `VIDIOC_QUERY_EXT_CTRL`.
func queryExtControl(_ fd: Int32, _ query: inout v4l2_query_ext_ctrl) -> Int32 {
    v4l2Ioctl(fd, EVC_VIDIOC_QUERY_EXT_CTRL, &query)
}

/// `VIDIOC_QUERYMENU` for one index: the entry's name and integer value, or the errno.
func queryMenu(_ fd: Int32, id: UInt32, index: UInt32) -> Result<(name: String, value: Int64), SystemError> {
    var name = [CChar](repeating: 0, count: 32)
    var value: Int64 = 0
    let e = errnoOf { evc_v4l2_querymenu(fd, id, index, &name, &value) }
    guard e == 0 else { return .failure(SystemError(errno: e)) }
    let text = string(fromCBuffer: name)
    return .success((text, value))
}

/// `VIDIOC_G_EXT_CTRLS` for one control's current value.
func getExtControl(_ fd: Int32, id: UInt32, is64: Bool, value: inout Int64) -> Int32 {
    errnoOf { evc_v4l2_ext_ctrl(fd, EVC_VIDIOC_G_EXT_CTRLS, id, is64 ? 1 : 0, &value) }
}

/// `VIDIOC_S_EXT_CTRLS` for one control's current value; `value` is what the kernel returned.
func setExtControl(_ fd: Int32, id: UInt32, is64: Bool, value: inout Int64) -> Int32 {
    errnoOf { evc_v4l2_ext_ctrl(fd, EVC_VIDIOC_S_EXT_CTRLS, id, is64 ? 1 : 0, &value) }
}

/// `VIDIOC_SUBSCRIBE_EVENT` / `VIDIOC_UNSUBSCRIBE_EVENT`.
func subscribeEvent(_ fd: Int32, _ sub: inout v4l2_event_subscription, subscribe: Bool) -> Int32 {
    v4l2Ioctl(fd, subscribe ? EVC_VIDIOC_SUBSCRIBE_EVENT : EVC_VIDIOC_UNSUBSCRIBE_EVENT, &sub)
}

/// `VIDIOC_DQEVENT` (ENOENT when nothing is pending).
func dequeueEvent(_ fd: Int32, _ event: inout v4l2_event) -> Int32 {
    v4l2Ioctl(fd, EVC_VIDIOC_DQEVENT, &event)
}

/// A fixed-size C char array (imported as a tuple) as a String.
func string<T>(fromCArray tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        let bytes = raw.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A NUL-terminated C buffer as a String.
func string(fromCBuffer buffer: [CChar]) -> String {
    buffer.withUnsafeBufferPointer { p in
        String(decoding: UnsafeRawBufferPointer(p).prefix { $0 != 0 }, as: UTF8.self)
    }
}
