// The only user of libcamera's C++ API: a camera manager, its cameras and one stream per
// camera behind the plain C interface of include/CLibcameraBridge.h. Every entry point
// catches what C++ may throw (allocation, a libcamera assertion turned exception) and turns
// it into an error code and message: no exception crosses into C or Swift.
//
// libcamera changes its C++ API between 0.x releases. Compiled and tested against 0.0.3
// (Debian 12); the places where later releases differ are marked with version checks and
// described in docs/libcamera.md.

#include "bridge_internal.h"

extern "C" {

int evc_lc_bridge_interface(void) { return EVC_LC_BRIDGE_INTERFACE; }

const char *evc_lc_compiled_version(void) { return kCompiledVersion; }

namespace {
/// libcamera's log lines to stderr, ERROR and FATAL ones only (logSetLevel matches exact
/// category names, so it cannot lower every category at once). libcamera writes each message
/// with one `<<` from whichever of its threads logs (the camera manager's, a pipeline
/// handler's, the caller's), with no lock of its own: each thread gathers its own line, so
/// two threads never share (or tear) one.
class ErrorLinesToStderr : public std::streambuf {
    int overflow(int c) override {
        thread_local std::string line;
        if (c == EOF) return 0;
        if (c != '\n') {
            line.push_back(static_cast<char>(c));
            return c;
        }
        if (line.find(" ERROR ") != std::string::npos || line.find(" FATAL ") != std::string::npos) {
            line.push_back('\n');
            std::fwrite(line.data(), 1, line.size(), stderr);  // one locked write per line
        }
        line.clear();
        return c;
    }
};
ErrorLinesToStderr errorLines;
std::ostream errorsOnly(&errorLines);

/// libcamera aborts the process on a second CameraManager: refuse it here instead.
std::atomic<bool> managerExists{ false };
}

void evc_lc_log_write(const char *message) {
    if (!message) return;
    try {
        errorsOnly << message;
        errorsOnly.flush();
    } catch (...) {
    }
}

evc_lc_manager *evc_lc_manager_start(evc_lc_hotplug_callback hotplug, void *context, evc_lc_error *error) {
    if (managerExists.exchange(true)) {
        fail(error, -EBUSY, "libcamera's camera manager is already running in this process");
        return nullptr;
    }
    evc_lc_manager *result = nullptr;
    guarded(error, "starting libcamera", [&] {
        // libcamera logs INFO and WARN lines to stderr by default; keep its errors only,
        // unless the person chose levels through libcamera's own variable.
        if (!std::getenv("LIBCAMERA_LOG_LEVELS")) logSetStream(&errorsOnly, false);
        auto owner = std::make_unique<evc_lc_manager>();
        owner->manager = std::make_unique<CameraManager>();
        owner->hotplug = hotplug;
        owner->context = context;
        owner->manager->cameraAdded.connect(owner.get(), &evc_lc_manager::added);
        owner->manager->cameraRemoved.connect(owner.get(), &evc_lc_manager::removed);
        int rc = owner->manager->start();
        if (rc < 0) return fail(error, rc, std::string("starting libcamera's camera manager: ") + std::strerror(-rc));
        owner->version = CameraManager::version();
        result = owner.release();
        return 0;
    });
    if (!result) managerExists.store(false);
    return result;
}

void evc_lc_manager_stop(evc_lc_manager *manager) {
    if (!manager) return;
    try {
        manager->manager->stop();
        delete manager;
    } catch (...) {
    }
    managerExists.store(false);
}

const char *evc_lc_manager_version(evc_lc_manager *manager) { return manager ? manager->version.c_str() : ""; }

size_t evc_lc_cameras(evc_lc_manager *manager, evc_lc_camera_info *out, size_t capacity) {
    if (!manager) return 0;
    try {
        auto cameras = manager->manager->cameras();
        for (size_t i = 0; i < cameras.size() && i < capacity && out; i++) {
            const auto &camera = cameras[i];
            evc_lc_camera_info &info = out[i];
            info = evc_lc_camera_info{};
            copyString(info.id, sizeof info.id, camera->id());
            const ControlList &properties = camera->properties();
            copyString(info.model, sizeof info.model, properties.get(properties::Model).value_or(""));
            info.location = properties.get(properties::Location).value_or(EVC_LC_LOCATION_UNKNOWN);
            info.is_uvc = info.location == EVC_LC_LOCATION_EXTERNAL && looksLikeUSBCamera(camera->id());
            if (auto maximum = properties.get(properties::ScalerCropMaximum)) {
                info.has_scaler_crop_maximum = 1;
                info.scaler_crop_maximum = rect(*maximum);
            }
        }
        return cameras.size();
    } catch (...) {
        return 0;
    }
}

int evc_lc_camera_controls(evc_lc_manager *manager, const char *id, evc_lc_control *out, size_t capacity,
                           size_t *count, evc_lc_error *error) {
    if (!manager || !count) return fail(error, -EINVAL, "no manager");
    return guarded(error, "listing controls", [&] {
        auto camera = manager->find(id, error);
        if (!camera) return -ENODEV;
        const ControlInfoMap &controls = camera->controls();
        size_t n = 0;
        for (const auto &[controlId, info] : controls) {
            if (n < capacity && out) {
                evc_lc_control &c = out[n];
                c = evc_lc_control{};
                c.id = controlId->id();
                copyString(c.name, sizeof c.name, controlId->name());
                c.type = controlType(controlId->type());
                c.minimum = number(info.min());
                c.maximum = number(info.max());
                c.default_value = number(info.def());
                c.minimum_rect = rectangle(info.min());
                c.maximum_rect = rectangle(info.max());
                c.default_rect = rectangle(info.def());
                for (const ControlValue &value : info.values()) {
                    if (c.value_count >= EVC_LC_MAX_VALUES) break;
                    c.values[c.value_count++] = static_cast<int32_t>(number(value));
                }
            }
            n++;
        }
        *count = n;
        return 0;
    });
}

int evc_lc_camera_properties(evc_lc_manager *manager, const char *id, char *buffer, size_t length,
                             evc_lc_error *error) {
    if (!manager || !buffer || length == 0) return fail(error, -EINVAL, "no manager or buffer");
    buffer[0] = 0;
    return guarded(error, "listing properties", [&] {
        auto camera = manager->find(id, error);
        if (!camera) return -ENODEV;
        std::ostringstream text;
        const ControlList &properties = camera->properties();
        for (const auto &[key, value] : properties) {
            auto name = properties::properties.find(key);
            text << (name != properties::properties.end() ? name->second->name() : std::to_string(key)) << " = "
                 << value.toString() << "\n";
        }
        copyString(buffer, length, text.str());
        return 0;
    });
}

int evc_lc_camera_formats(evc_lc_manager *manager, const char *id, evc_lc_format *out, size_t capacity,
                          size_t *count, evc_lc_error *error) {
    if (!manager || !count) return fail(error, -EINVAL, "no manager");
    return guarded(error, "listing formats", [&] {
        auto camera = manager->find(id, error);
        if (!camera) return -ENODEV;
        auto configuration = camera->generateConfiguration({ StreamRole::VideoRecording });
        if (!configuration || configuration->empty()) return fail(error, -EINVAL, "the camera offers no video stream");
        const StreamFormats &formats = configuration->at(0).formats();
        size_t n = 0;
        for (const PixelFormat &format : formats.pixelformats())
            for (const Size &size : formats.sizes(format)) {
                if (n < capacity && out) out[n] = evc_lc_format{ format.fourcc(), size.width, size.height };
                n++;
            }
        *count = n;
        return 0;
    });
}

} // extern "C"
