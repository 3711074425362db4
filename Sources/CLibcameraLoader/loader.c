// The libcamera bridge opened with dlopen on first use (CLibcameraLoader.h says why). As
// Sources/CFFmpeg/loader.c does for FFmpeg: each function of the bridge's interface is
// defined here with the bridge header's prototype (the compiler checks them against each
// other) and forwards to the symbol resolved by evc_lc_load.
#include "CLibcameraLoader.h"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// X(return type, name, parameters, arguments)
#define EVC_LC_FUNCTIONS(X) \
    X(int, evc_lc_bridge_interface, (void), ()) \
    X(const char *, evc_lc_compiled_version, (void), ()) \
    X(evc_lc_manager *, evc_lc_manager_start, (evc_lc_hotplug_callback hotplug, void *context, evc_lc_error *error), (hotplug, context, error)) \
    X(const char *, evc_lc_manager_version, (evc_lc_manager *manager), (manager)) \
    X(size_t, evc_lc_cameras, (evc_lc_manager *manager, evc_lc_camera_info *out, size_t capacity), (manager, out, capacity)) \
    X(int, evc_lc_camera_controls, (evc_lc_manager *manager, const char *id, evc_lc_control *out, size_t capacity, size_t *count, evc_lc_error *error), (manager, id, out, capacity, count, error)) \
    X(int, evc_lc_camera_properties, (evc_lc_manager *manager, const char *id, char *buffer, size_t length, evc_lc_error *error), (manager, id, buffer, length, error)) \
    X(int, evc_lc_camera_formats, (evc_lc_manager *manager, const char *id, evc_lc_format *out, size_t capacity, size_t *count, evc_lc_error *error), (manager, id, out, capacity, count, error)) \
    X(evc_lc_camera *, evc_lc_camera_open, (evc_lc_manager *manager, const char *id, evc_lc_error *error), (manager, id, error)) \
    X(int, evc_lc_camera_validate, (evc_lc_manager *manager, const char *id, const evc_lc_stream_request *streams, size_t count, int *status, evc_lc_stream_config *proposed, size_t *proposed_count, evc_lc_error *error), (manager, id, streams, count, status, proposed, proposed_count, error)) \
    X(int, evc_lc_camera_configure, (evc_lc_camera *camera, const evc_lc_stream_request *streams, size_t count, uint32_t buffer_count, evc_lc_stream_config *out, evc_lc_error *error), (camera, streams, count, buffer_count, out, error)) \
    X(int, evc_lc_camera_start, (evc_lc_camera *camera, evc_lc_frame_callback callback, void *context, evc_lc_error *error), (camera, callback, context, error)) \
    X(int, evc_lc_camera_stop, (evc_lc_camera *camera, evc_lc_error *error), (camera, error)) \
    X(int, evc_lc_camera_next_frame, (evc_lc_camera *camera, int timeout_ms, evc_lc_frame *frame, evc_lc_error *error), (camera, timeout_ms, frame, error)) \
    X(int, evc_lc_camera_requeue, (evc_lc_camera *camera, evc_lc_error *error), (camera, error)) \
    X(int, evc_lc_camera_set_int, (evc_lc_camera *camera, uint32_t id, int64_t value, evc_lc_error *error), (camera, id, value, error)) \
    X(int, evc_lc_camera_set_float, (evc_lc_camera *camera, uint32_t id, float value, evc_lc_error *error), (camera, id, value, error)) \
    X(int, evc_lc_camera_set_rect, (evc_lc_camera *camera, uint32_t id, evc_lc_rect value, evc_lc_error *error), (camera, id, value, error))

#define EVC_LC_VOID_FUNCTIONS(X) \
    X(evc_lc_manager_stop, (evc_lc_manager *manager), (manager)) \
    X(evc_lc_camera_close, (evc_lc_camera *camera), (camera)) \
    X(evc_lc_log_write, (const char *message), (message))

#define EVC_FIELD(ret, name, params, args) ret (*name) params;
#define EVC_VOID_FIELD(name, params, args) void (*name) params;
typedef struct bridge {
    EVC_LC_FUNCTIONS(EVC_FIELD)
    EVC_LC_VOID_FUNCTIONS(EVC_VOID_FIELD)
} bridge;
static bridge real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_result = -1;
static char load_error[512] = "not loaded";

/// Opens `path` and fills `out`; 0, or -1 with the reason. The handle stays open on success.
static int open_bridge(const char *path, bridge *out, void **handle_out, char *error, size_t size) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        // dlerror names the missing library (libcamera.so.0.0.3: cannot open shared object file…).
        snprintf(error, size, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    int (*interface)(void) = (int (*)(void))dlsym(handle, "evc_lc_bridge_interface");
    if (!interface) {
        snprintf(error, size, "%s is not evcapture's libcamera bridge (no evc_lc_bridge_interface)", path);
        dlclose(handle);
        return -1;
    }
    if (interface() != EVC_LC_BRIDGE_INTERFACE) {
        snprintf(error, size, "%s is from another evcapture (bridge interface %d, this evcapture needs %d): reinstall it with this one",
                 path, interface(), EVC_LC_BRIDGE_INTERFACE);
        dlclose(handle);
        return -1;
    }
#define EVC_RESOLVE(name) \
    if (!(*(void **)&out->name = dlsym(handle, #name))) { \
        snprintf(error, size, "%s has no %s", path, #name); \
        dlclose(handle); \
        return -1; \
    }
#define EVC_RESOLVE_FN(ret, name, params, args) EVC_RESOLVE(name)
#define EVC_RESOLVE_VOID(name, params, args) EVC_RESOLVE(name)
    EVC_LC_FUNCTIONS(EVC_RESOLVE_FN)
    EVC_LC_VOID_FUNCTIONS(EVC_RESOLVE_VOID)
    if (handle_out) *handle_out = handle;
    return 0;
}

static void load(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(load_error, sizeof load_error, "cannot find %s: /proc/self/exe is unreadable", EVC_LC_BRIDGE_FILE);
        return;
    }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    char candidates[2][PATH_MAX + 64];
    snprintf(candidates[0], sizeof candidates[0], "%s/%s", exe, EVC_LC_BRIDGE_FILE);
    snprintf(candidates[1], sizeof candidates[1], "%s/../lib/evcapture/%s", exe, EVC_LC_BRIDGE_FILE);
    for (int i = 0; i < 2; i++) {
        if (access(candidates[i], F_OK) != 0) continue;
        void *handle = NULL;
        load_result = open_bridge(candidates[i], &real, &handle, load_error, sizeof load_error);
        return;
    }
    snprintf(load_error, sizeof load_error, "no %s in %s or %s/../lib/evcapture (evcapture installed without libcamera support)",
             EVC_LC_BRIDGE_FILE, exe, exe);
}

int evc_lc_load(char *error, size_t error_size) {
    pthread_once(&once, load);
    if (load_result != 0 && error && error_size) snprintf(error, error_size, "%s", load_error);
    return load_result;
}

int evc_lc_check_bridge(const char *path, char *error, size_t error_size) {
    bridge scratch;
    void *handle = NULL;
    char reason[512];
    if (open_bridge(path, &scratch, &handle, reason, sizeof reason) != 0) {
        if (error && error_size) snprintf(error, error_size, "%s", reason);
        return -1;
    }
    // The loaded one (if it is this file) keeps its own reference.
    dlclose(handle);
    return 0;
}

// The forwarders: only called after evc_lc_load succeeded (LibcameraCamera checks it first).
#define EVC_FORWARD(ret, name, params, args) ret name params { return real.name args; }
#define EVC_FORWARD_VOID(name, params, args) void name params { real.name args; }
EVC_LC_FUNCTIONS(EVC_FORWARD)
EVC_LC_VOID_FUNCTIONS(EVC_FORWARD_VOID)
