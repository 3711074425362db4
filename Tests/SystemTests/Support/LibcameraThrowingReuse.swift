#if canImport(Glibc)
import Glibc
import Synchronization

/// A C++ exception on libcamera's own thread, on demand (docs/libcamera.md#loading): once
/// ``armNext()`` was called, the next `Request::reuse` throws a `std::runtime_error` saying
/// ``message`` instead of reusing the request. Every other call goes straight to libcamera's.
///
/// libcamera never calls `Request::reuse` itself (its library has no relocation for it, in
/// 0.0.3 as in 0.3.2): only the bridge does, to queue a request again. With a frame callback
/// that happens in the bridge's completion handler, on libcamera's thread, after the frame was
/// handed over, so once the stream runs an armed `reuse` throws there and nowhere else. (The
/// bridge's start reuses every request on the starting thread: arm after it.)
///
/// How: as ``LibcameraStopBeforeQueueing``, Package.swift exports this definition of
/// `libcamera::Request::reuse(ReuseFlag)` from the bundle, so the bridge (opened by `dlopen`)
/// calls it. Swift cannot throw a C++ exception: libstdc++'s own `std::__throw_runtime_error`
/// does, and the unwinder passes through this function's frames on its way to the bridge's
/// catch (swiftc emits their unwind information; nothing is held at the throw, no lock, no
/// reference, so nothing is left undone but the frames themselves).
enum LibcameraThrowingReuse {
    /// What the exception's `what()` says.
    static let message: StaticString = "Request::reuse threw on libcamera's thread (the test's exception)"

    fileprivate static let armed = Atomic<Bool>(false)
    fileprivate static let throwCount = Atomic<Int>(0)

    /// The next `Request::reuse`, on any thread, throws.
    static func armNext() { armed.store(true, ordering: .sequentiallyConsistent) }

    /// How many times `Request::reuse` threw.
    static var thrown: Int { throwCount.load(ordering: .sequentiallyConsistent) }

    /// `void std::__throw_runtime_error(const char *)`, from the libstdc++ in the process.
    fileprivate static let throwRuntimeError: @convention(c) (UnsafePointer<CChar>) -> Void = {
        guard let function = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "_ZSt21__throw_runtime_errorPKc") else {
            fatalError("libstdc++'s std::__throw_runtime_error not found")
        }
        return unsafeBitCast(function, to: (@convention(c) (UnsafePointer<CChar>) -> Void).self)
    }()
}

/// `void libcamera::Request::reuse(libcamera::Request::ReuseFlag)`, as the bridge calls it.
@_cdecl("_ZN9libcamera7Request5reuseENS0_9ReuseFlagE")
public func libcameraRequestReuse(_ request: UnsafeMutableRawPointer?, _ flags: UInt32) {
    if LibcameraThrowingReuse.armed.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged {
        LibcameraThrowingReuse.throwCount.add(1, ordering: .sequentiallyConsistent)
        let message = UnsafeRawPointer(LibcameraThrowingReuse.message.utf8Start).assumingMemoryBound(to: CChar.self)
        LibcameraThrowingReuse.throwRuntimeError(message)  // does not return
    }
    LibcameraCalls.loaded.reuse(request, flags)
}
#endif
