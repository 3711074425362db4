#if canImport(Glibc)
import Glibc
import Synchronization

/// A request libcamera itself refuses to queue, on demand (docs/libcamera.md#loading): the
/// next `Camera::queueRequest` made on a thread armed with ``armThisThread()`` first stops
/// that camera with libcamera's own `Camera::stop()`, then asks libcamera's real
/// `Camera::queueRequest`, which refuses a camera that is not running (-EACCES, and its
/// `Camera in Configured state trying queueRequest() requiring state Running` line). Every
/// other call goes straight to libcamera.
///
/// The vimc camera cannot make libcamera refuse a request otherwise: the bridge never queues
/// after its own stop, and libcamera's vimc handler ignores an unplug (the UVC handler's
/// unplug, which makes libcamera answer -ENODEV, has no camera in the lab).
///
/// How: the bridge (`libevcapture-libcamera.so`, opened by `dlopen`) resolves libcamera's
/// symbols through the global scope first, where the test bundle comes first, and
/// Package.swift exports this one symbol from the bundle (`--export-dynamic-symbol`): this
/// definition of `libcamera::Camera::queueRequest(Request *)` is the one the bridge calls.
/// Both libcamera functions are non-virtual members taking `this` first and returning int,
/// so a C function of that signature has their calling convention.
enum LibcameraStopBeforeQueueing {
    /// Threads (`pthread_self()`) whose next queueRequest stops the camera first.
    fileprivate static let armed = Mutex<Set<UInt>>([])

    /// The next `Camera::queueRequest` on this thread is made on a camera stopped first.
    static func armThisThread() {
        armed.withLock { _ = $0.insert(UInt(pthread_self())) }
    }

    /// Whether this thread was armed and has not queued since (disarms it).
    static func disarmThisThread() -> Bool {
        armed.withLock { $0.remove(UInt(pthread_self())) != nil }
    }

    /// The camera stops with `Camera::stop()`'s result here (0: it stopped).
    fileprivate static let stopResult = Mutex<Int32?>(nil)

    /// `Camera::stop()`'s result at the last armed queueRequest, nil when none ran.
    static var lastStopResult: Int32? { stopResult.withLock { $0 } }
}

typealias QueueRequest = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Int32
typealias Stop = @convention(c) (UnsafeMutableRawPointer?) -> Int32
/// `void libcamera::Request::reuse(ReuseFlag)`: `this`, then the flags (a plain enum, an int).
typealias Reuse = @convention(c) (UnsafeMutableRawPointer?, UInt32) -> Void

/// libcamera's own functions, from the libcamera the bridge loaded (0.0.3, or 0.3.2 in the
/// second pass): the object named `libcamera.so.*` mapped in the process. The ones the test
/// bundle defines again (this file, LibcameraThrowingReuse.swift) forward to these.
/// (@unchecked: C function pointers into a library that stays loaded, set once.)
struct LibcameraCalls: @unchecked Sendable {
    let queueRequest: QueueRequest
    let stop: Stop
    let reuse: Reuse

    static let loaded: LibcameraCalls = {
        // The mapped object named libcamera.so.* (/proc/self/maps' last column).
        // (Read to the end: procfs gives its files a size of 0.)
        var bytes: [UInt8] = []
        let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while case let n = read(fd, &chunk, chunk.count), n > 0 { bytes += chunk[0..<n] }
            close(fd)
        }
        let maps = String(decoding: bytes, as: UTF8.self)
        let path = maps.split(separator: "\n").compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).last }
            .first { $0.hasPrefix("/") && $0.split(separator: "/").last?.hasPrefix("libcamera.so") == true }.map(String.init)
        guard let path, let handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD),
            let queue = dlsym(handle, "_ZN9libcamera6Camera12queueRequestEPNS_7RequestE"),
            let stop = dlsym(handle, "_ZN9libcamera6Camera4stopEv"),
            let reuse = dlsym(handle, "_ZN9libcamera7Request5reuseENS0_9ReuseFlagE")
        else {
            fatalError("libcamera's Camera::queueRequest, Camera::stop or Request::reuse not found (libcamera at \(path ?? "none"))")
        }
        return LibcameraCalls(
            queueRequest: unsafeBitCast(queue, to: QueueRequest.self), stop: unsafeBitCast(stop, to: Stop.self),
            reuse: unsafeBitCast(reuse, to: Reuse.self))
    }()
}

/// `int libcamera::Camera::queueRequest(libcamera::Request *)`, as the bridge calls it.
@_cdecl("_ZN9libcamera6Camera12queueRequestEPNS_7RequestE")
public func libcameraCameraQueueRequest(_ camera: UnsafeMutableRawPointer?, _ request: UnsafeMutableRawPointer?) -> Int32 {
    let libcamera = LibcameraCalls.loaded
    if LibcameraStopBeforeQueueing.disarmThisThread() {
        let stopped = libcamera.stop(camera)
        LibcameraStopBeforeQueueing.stopResult.withLock { $0 = stopped }
    }
    return libcamera.queueRequest(camera, request)
}
#endif
