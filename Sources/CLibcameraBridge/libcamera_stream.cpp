// One camera's streams through libcamera: acquire, configure one or two streams (the capture
// stream and the live view's) in one configuration, allocate their buffers
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
    if (camera->allocator)
        for (Stream *stream : camera->streams) camera->allocator->free(stream);
    camera->allocator.reset();
    camera->streams.clear();
}

static StreamRole streamRole(int role) {
    switch (role) {
    case EVC_LC_ROLE_RAW: return StreamRole::Raw;
    case EVC_LC_ROLE_STILL_CAPTURE: return StreamRole::StillCapture;
    case EVC_LC_ROLE_VIEWFINDER: return StreamRole::Viewfinder;
    default: return StreamRole::VideoRecording;
    }
}

/// generateConfiguration with the streams' roles, each stream set as asked; a stream the
/// camera did not generate is added, so that validate() says what it makes of it. Null
/// (with `error` filled) when the camera generates nothing.
static std::unique_ptr<CameraConfiguration> askFor(Camera &camera, const evc_lc_stream_request *streams, size_t count,
                                                   uint32_t buffer_count, evc_lc_error *error) {
    std::vector<StreamRole> roles;
    for (size_t i = 0; i < count; i++) roles.push_back(streamRole(streams[i].role));
    auto configuration = camera.generateConfiguration(roles);
    if (!configuration || configuration->empty()) {
        // Some pipeline handlers generate nothing for a set of roles they cannot serve.
        configuration = camera.generateConfiguration({ streamRole(streams[0].role) });
        if (!configuration || configuration->empty()) {
            fail(error, -EINVAL, "the camera offers no video stream");
            return nullptr;
        }
    }
    while (configuration->size() < count) configuration->addConfiguration(StreamConfiguration());
    for (size_t i = 0; i < count; i++) {
        StreamConfiguration &stream = configuration->at(i);
        stream.pixelFormat = PixelFormat(streams[i].fourcc);
        stream.size = Size(streams[i].width, streams[i].height);
        if (i == 0 && buffer_count > 0) stream.bufferCount = buffer_count;
    }
    return configuration;
}

static evc_lc_stream_config described(const StreamConfiguration &stream) {
    return evc_lc_stream_config{ stream.pixelFormat.fourcc(), stream.size.width, stream.size.height, stream.stride,
                                 stream.frameSize, stream.bufferCount };
}

static bool countOK(size_t count, evc_lc_error *error) {
    if (count >= 1 && count <= EVC_LC_MAX_STREAMS) return true;
    fail(error, -EINVAL, "asked for " + std::to_string(count) + " streams (1 to " + std::to_string(EVC_LC_MAX_STREAMS) + ")");
    return false;
}

int evc_lc_camera_validate(evc_lc_manager *manager, const char *id, const evc_lc_stream_request *streams, size_t count,
                           int *status, evc_lc_stream_config *proposed, size_t *proposed_count, evc_lc_error *error) {
    if (!manager || !streams || !status || !proposed || !proposed_count) return fail(error, -EINVAL, "no manager");
    if (!countOK(count, error)) return -EINVAL;
    return guarded(error, "validating streams", [&] {
        auto camera = manager->find(id, error);
        if (!camera) return -ENODEV;
        auto configuration = askFor(*camera, streams, count, 0, error);
        if (!configuration) return -EINVAL;
        switch (configuration->validate()) {
        case CameraConfiguration::Valid: *status = EVC_LC_CONFIG_VALID; break;
        case CameraConfiguration::Adjusted: *status = EVC_LC_CONFIG_ADJUSTED; break;
        default: *status = EVC_LC_CONFIG_INVALID; break;
        }
        *proposed_count = std::min<size_t>(configuration->size(), EVC_LC_MAX_STREAMS);
        for (size_t i = 0; i < *proposed_count; i++) proposed[i] = described(configuration->at(i));
        return 0;
    });
}

/// Maps each dmabuf of `buffer` once, whole (the planes of a buffer may share one).
static int mapBuffer(evc_lc_camera *camera, const FrameBuffer &buffer, evc_lc_error *error) {
    std::map<int, size_t> lengths;
    for (const auto &plane : buffer.planes()) {
        size_t end = static_cast<size_t>(plane.offset) + plane.length;
        auto &length = lengths[plane.fd.get()];
        if (end > length) length = end;
    }
    for (const auto &[fd, length] : lengths) {
        if (camera->maps.count(fd)) continue;
        void *address = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
        if (address == MAP_FAILED) {
            int err = errno;
            return fail(error, -err, std::string("mapping a frame buffer: ") + std::strerror(err));
        }
        camera->maps[fd] = { static_cast<uint8_t *>(address), length };
    }
    return 0;
}

int evc_lc_camera_configure(evc_lc_camera *camera, const evc_lc_stream_request *streams, size_t count,
                            uint32_t buffer_count, evc_lc_stream_config *out, evc_lc_error *error) {
    if (!camera || !streams) return fail(error, -EINVAL, "no camera");
    if (camera->started) return fail(error, -EBUSY, "the camera is streaming");
    if (!countOK(count, error)) return -EINVAL;
    return guarded(error, "configuring the stream", [&] {
        freeBuffers(camera);
        auto configuration = askFor(*camera->camera, streams, count, buffer_count, error);
        if (!configuration) return -EINVAL;
        if (configuration->validate() == CameraConfiguration::Invalid)
            return fail(error, -EINVAL, "the camera refuses the stream " + configuration->at(0).toString());
        if (configuration->size() < count)
            return fail(error, -EINVAL, "the camera gives " + std::to_string(configuration->size()) + " of the " +
                                            std::to_string(count) + " streams asked");
        for (size_t i = 0; i < count; i++) {
            const StreamConfiguration &stream = configuration->at(i);
            if (stream.pixelFormat.fourcc() != streams[i].fourcc)
                return fail(error, -EINVAL, "the camera does not offer that pixel format (it proposes " +
                                                stream.toString() + ")");
        }
        int rc = camera->camera->configure(configuration.get());
        if (rc < 0) return fail(error, rc, std::string("configuring: ") + std::strerror(-rc));
        camera->configuration = std::move(configuration);
        camera->allocator = std::make_unique<FrameBufferAllocator>(camera->camera);
        size_t requestCount = SIZE_MAX;
        for (size_t i = 0; i < count; i++) {
            Stream *stream = camera->configuration->at(i).stream();
            camera->streams.push_back(stream);
            rc = camera->allocator->allocate(stream);
            if (rc < 0) {
                freeBuffers(camera);
                return fail(error, rc, std::string("allocating buffers: ") + std::strerror(-rc));
            }
            for (const auto &buffer : camera->allocator->buffers(stream)) {
                rc = mapBuffer(camera, *buffer, error);
                if (rc < 0) {
                    freeBuffers(camera);
                    return rc;
                }
            }
            requestCount = std::min(requestCount, camera->allocator->buffers(stream).size());
        }
        // One request per buffer (of the stream with the fewest), each with a buffer of every stream.
        for (size_t n = 0; n < requestCount; n++) {
            auto request = camera->camera->createRequest();
            if (!request) {
                freeBuffers(camera);
                return fail(error, -ENOMEM, "creating a request");
            }
            for (Stream *stream : camera->streams) {
                rc = request->addBuffer(stream, camera->allocator->buffers(stream)[n].get());
                if (rc < 0) {
                    freeBuffers(camera);
                    return fail(error, rc, std::string("adding a buffer to a request: ") + std::strerror(-rc));
                }
            }
            camera->requests.push_back(std::move(request));
        }
        if (out) {
            for (size_t i = 0; i < count; i++) {
                out[i] = described(camera->configuration->at(i));
                out[i].buffer_count = static_cast<uint32_t>(camera->requests.size());
            }
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
            camera->failedCode = 0;
            camera->failedMessage.clear();
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
                camera->stopQueueing();
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
        camera->stopQueueing();
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
            return !camera->completedRequests.empty() || camera->disconnected || !camera->running.load() ||
                   camera->failedCode != 0;
        });
        if (camera->failedCode != 0) return fail(error, camera->failedCode, camera->failedMessage);
        if (camera->disconnected) return fail(error, -ENODEV, "the camera " + camera->camera->id() + " was disconnected");
        if (!camera->running.load()) return fail(error, -EPIPE, "the camera is not streaming");
        if (camera->completedRequests.empty()) return fail(error, -ETIMEDOUT, "no frame within " + std::to_string(timeout_ms) + " ms");
        camera->borrowed = camera->completedRequests.front();
        camera->completedRequests.pop_front();
        camera->fill(camera->borrowed, *frame, &camera->borrowedSecond);
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
        int rc = camera->requeue(request);
        if (rc < 0) {
            // Said now and again by every later wait: the stream is one buffer short for good.
            camera->failed(rc, std::string("queueing a request again: ") + std::strerror(-rc));
            return fail(error, rc, std::string("queueing a request again: ") + std::strerror(-rc));
        }
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
