// One camera's stream through libcamera: acquire, configure one stream, allocate its buffers
// once (FrameBufferAllocator), map their dmabufs, recycle the requests, stop and release.
// Like libcamera_bridge.cpp, no exception leaves these functions.

#include "bridge_internal.h"

extern "C" {

evc_lc_camera *evc_lc_camera_open(evc_lc_manager *manager, const char *id, evc_lc_error *error) {
    if (!manager) {
        fail(error, -EINVAL, "no manager");
        return nullptr;
    }
    evc_lc_camera *result = nullptr;
    guarded(error, "opening camera", [&] {
        auto camera = manager->find(id, error);
        if (!camera) return -ENODEV;
        int rc = camera->acquire();
        if (rc < 0) return fail(error, rc, std::string("acquiring ") + id + ": " + std::strerror(-rc));
        auto owner = std::make_unique<evc_lc_camera>();
        owner->camera = camera;
        owner->camera->requestCompleted.connect(owner.get(), &evc_lc_camera::completed);
        owner->camera->disconnected.connect(owner.get(), &evc_lc_camera::unplugged);
        result = owner.release();
        return 0;
    });
    return result;
}

static void freeBuffers(evc_lc_camera *camera) {
    camera->requests.clear();
    camera->unmap();
    if (camera->allocator && camera->stream) camera->allocator->free(camera->stream);
    camera->allocator.reset();
    camera->stream = nullptr;
}

int evc_lc_camera_configure(evc_lc_camera *camera, uint32_t fourcc, uint32_t width, uint32_t height,
                            uint32_t buffer_count, evc_lc_stream_config *out, evc_lc_error *error) {
    if (!camera) return fail(error, -EINVAL, "no camera");
    if (camera->started) return fail(error, -EBUSY, "the camera is streaming");
    return guarded(error, "configuring the stream", [&] {
        freeBuffers(camera);
        auto configuration = camera->camera->generateConfiguration({ StreamRole::VideoRecording });
        if (!configuration || configuration->empty()) return fail(error, -EINVAL, "the camera offers no video stream");
        StreamConfiguration &stream = configuration->at(0);
        stream.pixelFormat = PixelFormat(fourcc);
        stream.size = Size(width, height);
        if (buffer_count > 0) stream.bufferCount = buffer_count;
        if (configuration->validate() == CameraConfiguration::Invalid)
            return fail(error, -EINVAL, "the camera refuses the stream " + stream.toString());
        if (stream.pixelFormat.fourcc() != fourcc)
            return fail(error, -EINVAL, "the camera does not offer that pixel format (it proposes " +
                                            stream.toString() + ")");
        int rc = camera->camera->configure(configuration.get());
        if (rc < 0) return fail(error, rc, std::string("configuring: ") + std::strerror(-rc));
        camera->configuration = std::move(configuration);
        camera->stream = camera->configuration->at(0).stream();
        camera->allocator = std::make_unique<FrameBufferAllocator>(camera->camera);
        rc = camera->allocator->allocate(camera->stream);
        if (rc < 0) {
            freeBuffers(camera);
            return fail(error, rc, std::string("allocating buffers: ") + std::strerror(-rc));
        }
        for (const auto &buffer : camera->allocator->buffers(camera->stream)) {
            // Map each dmabuf once, whole: the planes of a buffer may share one.
            std::map<int, size_t> lengths;
            for (const auto &plane : buffer->planes()) {
                size_t end = static_cast<size_t>(plane.offset) + plane.length;
                auto &length = lengths[plane.fd.get()];
                if (end > length) length = end;
            }
            for (const auto &[fd, length] : lengths) {
                if (camera->maps.count(fd)) continue;
                void *address = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
                if (address == MAP_FAILED) {
                    int err = errno;
                    freeBuffers(camera);
                    return fail(error, -err, std::string("mapping a frame buffer: ") + std::strerror(err));
                }
                camera->maps[fd] = { static_cast<uint8_t *>(address), length };
            }
            auto request = camera->camera->createRequest();
            if (!request) {
                freeBuffers(camera);
                return fail(error, -ENOMEM, "creating a request");
            }
            rc = request->addBuffer(camera->stream, buffer.get());
            if (rc < 0) {
                freeBuffers(camera);
                return fail(error, rc, std::string("adding a buffer to a request: ") + std::strerror(-rc));
            }
            camera->requests.push_back(std::move(request));
        }
        if (out) {
            const StreamConfiguration &done = camera->configuration->at(0);
            *out = evc_lc_stream_config{ done.pixelFormat.fourcc(), done.size.width, done.size.height, done.stride,
                                         done.frameSize, static_cast<uint32_t>(camera->requests.size()) };
        }
        return 0;
    });
}

int evc_lc_camera_start(evc_lc_camera *camera, evc_lc_frame_callback callback, void *context, evc_lc_error *error) {
    if (!camera) return fail(error, -EINVAL, "no camera");
    if (camera->started) return fail(error, -EBUSY, "the camera is already streaming");
    if (camera->requests.empty()) return fail(error, -EINVAL, "the stream is not configured");
    return guarded(error, "starting the camera", [&] {
        camera->callback = callback;
        camera->context = context;
        {
            std::lock_guard<std::mutex> guard(camera->lock);
            camera->completedRequests.clear();
            camera->borrowed = nullptr;
        }
        std::unique_ptr<ControlList> first;
        {
            std::lock_guard<std::mutex> guard(camera->lock);
            first = std::move(camera->pending);
        }
        int rc = camera->camera->start(first.get());
        if (rc < 0) return fail(error, rc, std::string("starting: ") + std::strerror(-rc));
        camera->started = true;
        camera->running.store(true);
        for (auto &request : camera->requests) {
            // After a stop() the requests are still cancelled (the handler did not reuse
            // them): queued like that, libcamera aborts on completing them a second time.
            request->reuse(Request::ReuseBuffers);
            rc = camera->camera->queueRequest(request.get());
            if (rc < 0) {
                camera->running.store(false);
                camera->camera->stop();
                camera->started = false;
                return fail(error, rc, std::string("queueing a request: ") + std::strerror(-rc));
            }
        }
        return 0;
    });
}

// Also called by evc_lc_camera_close: the bridge never calls its own exported functions
// (the executable exports forwarders of the same names, CLibcameraLoader).
static int stopCamera(evc_lc_camera *camera, evc_lc_error *error) {
    if (!camera->started) return 0;
    return guarded(error, "stopping the camera", [&] {
        // Completion handlers see running == false and neither deliver nor requeue; stop()
        // returns after every queued request completed (cancelled).
        camera->running.store(false);
        camera->ready.notify_all();
        int rc = camera->camera->stop();
        camera->started = false;
        std::lock_guard<std::mutex> guard(camera->lock);
        camera->completedRequests.clear();
        camera->borrowed = nullptr;
        if (rc < 0) return fail(error, rc, std::string("stopping: ") + std::strerror(-rc));
        return 0;
    });
}

int evc_lc_camera_stop(evc_lc_camera *camera, evc_lc_error *error) {
    if (!camera) return fail(error, -EINVAL, "no camera");
    return stopCamera(camera, error);
}

int evc_lc_camera_next_frame(evc_lc_camera *camera, int timeout_ms, evc_lc_frame *frame, evc_lc_error *error) {
    if (!camera || !frame) return fail(error, -EINVAL, "no camera");
    if (camera->callback) return fail(error, -EINVAL, "the camera delivers its frames to a callback");
    return guarded(error, "waiting for a frame", [&] {
        std::unique_lock<std::mutex> guard(camera->lock);
        if (camera->borrowed) return fail(error, -EBUSY, "the last frame was not given back");
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        camera->ready.wait_until(guard, until, [&] {
            return !camera->completedRequests.empty() || camera->disconnected || !camera->running.load();
        });
        if (camera->disconnected) return fail(error, -ENODEV, "the camera " + camera->camera->id() + " was disconnected");
        if (!camera->running.load()) return fail(error, -EPIPE, "the camera is not streaming");
        if (camera->completedRequests.empty()) return fail(error, -ETIMEDOUT, "no frame within " + std::to_string(timeout_ms) + " ms");
        camera->borrowed = camera->completedRequests.front();
        camera->completedRequests.pop_front();
        camera->fill(camera->borrowed, *frame);
        return 0;
    });
}

int evc_lc_camera_requeue(evc_lc_camera *camera, evc_lc_error *error) {
    if (!camera) return fail(error, -EINVAL, "no camera");
    return guarded(error, "requeueing a request", [&] {
        Request *request;
        {
            std::lock_guard<std::mutex> guard(camera->lock);
            request = camera->borrowed;
            camera->borrowed = nullptr;
        }
        if (!request) return fail(error, -EINVAL, "no frame to give back");
        if (!camera->running.load()) return 0;
        camera->requeue(request);
        return 0;
    });
}

int evc_lc_camera_set_int(evc_lc_camera *camera, uint32_t id, int64_t value, evc_lc_error *error) {
    if (!camera) return fail(error, -EINVAL, "no camera");
    return guarded(error, "setting a control", [&] {
        auto found = camera->camera->controls().find(id);
        if (found == camera->camera->controls().end())
            return fail(error, -EINVAL, "the camera has no control with id " + std::to_string(id));
        switch (found->first->type()) {
        case ControlTypeBool: return camera->setControl(id, ControlValue(value != 0), error);
        case ControlTypeInteger32:
            if (value < INT32_MIN || value > INT32_MAX) return fail(error, -ERANGE, "value out of range");
            return camera->setControl(id, ControlValue(static_cast<int32_t>(value)), error);
        case ControlTypeInteger64: return camera->setControl(id, ControlValue(value), error);
        default: return fail(error, -EINVAL, "control " + found->first->name() + " is not an integer control");
        }
    });
}

int evc_lc_camera_set_float(evc_lc_camera *camera, uint32_t id, float value, evc_lc_error *error) {
    if (!camera) return fail(error, -EINVAL, "no camera");
    return guarded(error, "setting a control", [&] { return camera->setControl(id, ControlValue(value), error); });
}

int evc_lc_camera_set_rect(evc_lc_camera *camera, uint32_t id, evc_lc_rect value, evc_lc_error *error) {
    if (!camera) return fail(error, -EINVAL, "no camera");
    return guarded(error, "setting a control", [&] {
        return camera->setControl(id, ControlValue(Rectangle(value.x, value.y, value.width, value.height)), error);
    });
}

void evc_lc_camera_close(evc_lc_camera *camera) {
    if (!camera) return;
    try {
        stopCamera(camera, nullptr);
        camera->camera->requestCompleted.disconnect(camera);
        camera->camera->disconnected.disconnect(camera);
        freeBuffers(camera);
        camera->camera->release();
    } catch (...) {
    }
    delete camera;
}

} // extern "C"
