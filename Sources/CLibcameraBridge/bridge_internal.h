// What the bridge's two C++ files share: helpers and the objects behind the C handles.
// Compiled against libcamera 0.0.3 (docs/libcamera.md).
#pragma once

#include "CLibcameraBridge.h"

#include <libcamera/libcamera.h>
#include <libcamera/version.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

// ControlList::get returns std::optional from 0.0.1 on; earlier releases are not supported.
#if LIBCAMERA_VERSION_MAJOR == 0 && LIBCAMERA_VERSION_MINOR == 0 && LIBCAMERA_VERSION_PATCH < 1
#error "libcamera 0.0.1 or later is needed (ControlList::get returning std::optional)"
#endif

using namespace libcamera;

namespace evc_lc {

#define EVC_STR2(x) #x
#define EVC_STR(x) EVC_STR2(x)
inline const char kCompiledVersion[] = EVC_STR(LIBCAMERA_VERSION_MAJOR) "." EVC_STR(LIBCAMERA_VERSION_MINOR) "." EVC_STR(
    LIBCAMERA_VERSION_PATCH);

inline int fail(evc_lc_error *error, int code, const std::string &message) {
    if (error) {
        error->code = code < 0 ? code : -1;
        std::snprintf(error->message, sizeof error->message, "%s", message.c_str());
    }
    return code < 0 ? code : -1;
}

// A string_view: libcamera 0.7 gives properties::Model as one, earlier releases a std::string.
inline void copyString(char *to, size_t size, std::string_view from) {
    std::snprintf(to, size, "%.*s", static_cast<int>(from.size()), from.data());
}

inline evc_lc_rect rect(const Rectangle &r) { return evc_lc_rect{ r.x, r.y, r.width, r.height }; }

/// Runs `body`, turning any exception into an error code and message.
template <typename Body> int guarded(evc_lc_error *error, const char *what, Body body) {
    try {
        return body();
    } catch (const std::exception &e) {
        return fail(error, -1, std::string(what) + ": " + e.what());
    } catch (...) {
        return fail(error, -1, std::string(what) + ": unknown C++ exception");
    }
}

inline bool looksLikeUSBCamera(const std::string &id) {
    // The UVC pipeline handler ends its ids in "-vvvv:pppp" (USB vendor and product).
    if (id.size() < 10) return false;
    const std::string tail = id.substr(id.size() - 10);
    if (tail[0] != '-' || tail[5] != ':') return false;
    for (size_t i = 1; i < tail.size(); i++)
        if (i != 5 && !std::isxdigit(static_cast<unsigned char>(tail[i]))) return false;
    return true;
}

inline int controlType(ControlType type) {
    switch (type) {
    case ControlTypeNone: return EVC_LC_TYPE_NONE;
    case ControlTypeBool: return EVC_LC_TYPE_BOOL;
    case ControlTypeByte: return EVC_LC_TYPE_BYTE;
    case ControlTypeInteger32: return EVC_LC_TYPE_INT32;
    case ControlTypeInteger64: return EVC_LC_TYPE_INT64;
    case ControlTypeFloat: return EVC_LC_TYPE_FLOAT;
    case ControlTypeString: return EVC_LC_TYPE_STRING;
    case ControlTypeRectangle: return EVC_LC_TYPE_RECTANGLE;
    case ControlTypeSize: return EVC_LC_TYPE_SIZE;
    default: return EVC_LC_TYPE_OTHER;  // types added after 0.0.3 (unsigned integers, Point)
    }
}

/// A scalar ControlValue as a double; 0 for arrays and other types.
inline double number(const ControlValue &value) {
    if (value.isArray()) return 0;
    switch (value.type()) {
    case ControlTypeBool: return value.get<bool>() ? 1 : 0;
    case ControlTypeByte: return value.get<uint8_t>();
    case ControlTypeInteger32: return value.get<int32_t>();
    case ControlTypeInteger64: return static_cast<double>(value.get<int64_t>());
    case ControlTypeFloat: return value.get<float>();
    default: return 0;
    }
}

inline evc_lc_rect rectangle(const ControlValue &value) {
    if (value.type() != ControlTypeRectangle || value.isArray()) return evc_lc_rect{};
    return rect(value.get<Rectangle>());
}

} // namespace evc_lc

using namespace evc_lc;

struct evc_lc_manager {
    std::unique_ptr<CameraManager> manager;
    evc_lc_hotplug_callback hotplug = nullptr;
    void *context = nullptr;
    std::string version;

    // Called on libcamera's thread, outside every entry point's guard: nothing may escape
    // into libcamera (an exception there ends the process).
    void added(std::shared_ptr<Camera> camera) { report(camera, 1); }
    void removed(std::shared_ptr<Camera> camera) { report(camera, 0); }
    void report(const std::shared_ptr<Camera> &camera, int isAdded) {
        try {
            if (hotplug) hotplug(context, camera->id().c_str(), isAdded);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "evcapture: libcamera's hotplug report failed: %s\n", e.what());
        } catch (...) {
            std::fprintf(stderr, "evcapture: libcamera's hotplug report failed: unknown C++ exception\n");
        }
    }
    std::shared_ptr<Camera> find(const char *id, evc_lc_error *error) {
        auto camera = id ? manager->get(id) : nullptr;
        if (!camera) fail(error, -ENODEV, std::string("no libcamera camera ") + (id ? id : "(null)"));
        return camera;
    }
};

struct evc_lc_camera {
    std::shared_ptr<Camera> camera;
    std::unique_ptr<CameraConfiguration> configuration;
    std::unique_ptr<FrameBufferAllocator> allocator;
    /// The configured streams, in the order asked (the capture stream first).
    std::vector<Stream *> streams;
    std::vector<std::unique_ptr<Request>> requests;
    /// Each mapped dmabuf (by fd) with its length.
    std::map<int, std::pair<uint8_t *, size_t>> maps;
    evc_lc_frame_callback callback = nullptr;
    void *context = nullptr;
    std::atomic<bool> running{ false };
    /// Held while a request is checked against `running` and queued, and while `running` is
    /// cleared before a stop (never across the stop itself). Camera::queueRequest posts a
    /// message to libcamera's thread and Camera::stop another; they run in the order posted.
    /// Without the lock a completion could pass the check, the stop's message go first, and
    /// the late request reach the pipeline inside its stop (libcamera 0.0.3's vimc IPA then
    /// aborts the process on "state_ == ProxyRunning"). With it, a request that passed the
    /// check is posted before the stop's message, and every later one sees `running` false.
    std::mutex queueLock;
    bool started = false;
    /// Controls for the next request queued; guarded by `lock`.
    std::mutex lock;
    std::unique_ptr<ControlList> pending;
    /// Without a callback: completed requests waiting for evc_lc_camera_next_frame, the one
    /// it handed out (until evc_lc_camera_requeue), and whether the camera went away; all
    /// guarded by `lock`, `ready` signalled at each change.
    std::deque<Request *> completedRequests;
    Request *borrowed = nullptr;
    /// The second stream's frame of `borrowed`.
    evc_lc_frame borrowedSecond{};
    bool disconnected = false;
    /// A failure on libcamera's thread (a request not queued again, an exception in the
    /// completion handler): the stream's error, given by the next evc_lc_camera_next_frame
    /// (or, with a callback, as a frame whose status is the code, its last until the stream
    /// starts again). Guarded by `lock`.
    int failedCode = 0;
    std::string failedMessage;
    std::condition_variable ready;

    /// Records the stream's failure; false when it had failed already (the first failure is
    /// the one to tell).
    bool failed(int code, const std::string &message) {
        {
            std::lock_guard<std::mutex> guard(lock);
            if (failedCode != 0) return false;
            failedCode = code < 0 ? code : -EIO;
            failedMessage = message;
        }
        ready.notify_all();
        return true;
    }

    /// `failed`, and with a callback the failure as a frame: its status the code, no planes.
    void streamFailed(int code, const std::string &message) {
        if (!failed(code, message) || !callback) return;
        evc_lc_frame failure{};
        failure.status = code < 0 ? code : -EIO;
        callback(context, &failure);
    }

    void unplugged() {
        {
            std::lock_guard<std::mutex> guard(lock);
            disconnected = true;
        }
        ready.notify_all();
    }

    /// The frame of `request`'s buffer of `streams[0]`; with a second stream, `second` gets
    /// that stream's buffer (same request: the same SensorTimestamp) and `frame.second` points
    /// at it.
    void fill(Request *request, evc_lc_frame &frame, evc_lc_frame *second) {
        fillStream(request, 0, frame);
        if (second && streams.size() > 1) {
            fillStream(request, 1, *second);
            frame.second = second;
        }
    }

    void fillStream(Request *request, size_t index, evc_lc_frame &frame) {
        frame = evc_lc_frame{};
        FrameBuffer *buffer = index < streams.size() ? request->findBuffer(streams[index]) : nullptr;
        if (!buffer) return;
        const FrameMetadata &metadata = buffer->metadata();
        frame.status = metadata.status == FrameMetadata::FrameSuccess ? 0 : static_cast<int>(metadata.status);
        frame.sequence = metadata.sequence;
        frame.buffer_timestamp_ns = metadata.timestamp;
        frame.sensor_timestamp_ns = request->metadata().get(controls::SensorTimestamp).value_or(0);
        frame.exposure_time_us = request->metadata().get(controls::ExposureTime).value_or(0);
        const auto &planes = buffer->planes();
        const auto used = metadata.planes();
        for (size_t i = 0; i < planes.size() && i < 3; i++) {
            auto found = maps.find(planes[i].fd.get());
            if (found == maps.end()) continue;
            size_t bytes = i < used.size() ? used[i].bytesused : planes[i].length;
            if (bytes > planes[i].length) bytes = planes[i].length;
            frame.planes[frame.plane_count] = found->second.first + planes[i].offset;
            frame.plane_bytes[frame.plane_count] = bytes;
            frame.plane_count++;
        }
    }

    /// The request back to the camera, with the controls set since: 0 or libcamera's
    /// negative code. A request not queued is a frame buffer the stream has lost for good.
    int requeue(Request *request) {
        request->reuse(Request::ReuseBuffers);
        {
            std::lock_guard<std::mutex> guard(lock);
            if (pending) {
                request->controls().merge(*pending);
                pending->clear();
            }
        }
        std::lock_guard<std::mutex> queueing(queueLock);
        if (!running.load()) return 0;
        return camera->queueRequest(request);
    }

    /// Clears `running` (see `queueLock`): completions neither deliver nor requeue after it.
    void stopQueueing() {
        std::lock_guard<std::mutex> queueing(queueLock);
        running.store(false);
    }

    void unmap() {
        for (auto &entry : maps) munmap(entry.second.first, entry.second.second);
        maps.clear();
    }

    /// libcamera's requestCompleted signal, on its thread, outside every entry point's
    /// guard: what fails here becomes the stream's error (`streamFailed`), never an exception
    /// into libcamera (the outer catch: not even telling the failure may throw there).
    void completed(Request *request) {
        try {
            try {
                deliver(request);
            } catch (const std::exception &e) {
                streamFailed(-EIO, std::string("completing a request: ") + e.what());
            } catch (...) {
                streamFailed(-EIO, "completing a request: unknown C++ exception");
            }
        } catch (...) {
        }
    }

    void deliver(Request *request) {
        if (request->status() == Request::RequestCancelled || !running.load()) return;
        if (!callback) {
            // Pull mode: the reader's thread copies the frame and requeues the request.
            {
                std::lock_guard<std::mutex> guard(lock);
                completedRequests.push_back(request);
            }
            ready.notify_all();
            return;
        }
        {
            // A failed stream gives a callback no more frames, as it gives a reader none.
            std::lock_guard<std::mutex> guard(lock);
            if (failedCode != 0) return;
        }
        evc_lc_frame frame, second;
        fill(request, frame, &second);
        callback(context, &frame);
        if (!running.load()) return;
        int rc = requeue(request);
        if (rc < 0) streamFailed(rc, std::string("queueing a request again: ") + std::strerror(-rc));
    }

    int setControl(uint32_t id, const ControlValue &value, evc_lc_error *error) {
        const ControlInfoMap &info = camera->controls();
        auto found = info.find(id);
        if (found == info.end()) return fail(error, -EINVAL, "the camera has no control with id " + std::to_string(id));
        if (found->first->type() != value.type())
            return fail(error, -EINVAL, "control " + found->first->name() + " takes another type of value");
        std::lock_guard<std::mutex> guard(lock);
        if (!pending) pending = std::make_unique<ControlList>(info);
        pending->set(id, value);
        return 0;
    }
};

