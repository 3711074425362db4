// The plain C interface to libcamera (the bridge's C++ is in libcamera_bridge.cpp). No C++
// exception crosses it: every call that can fail returns 0 or a negative errno-style code and
// fills an evc_lc_error. See docs/libcamera.md for the libcamera versions it was compiled with.
//
// The bridge is its own shared object (libevcapture-libcamera.so), opened on first use by
// Sources/CLibcameraLoader: evcapture itself never links libcamera.
#ifndef EVC_LIBCAMERA_BRIDGE_H
#define EVC_LIBCAMERA_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Why a call failed: `code` is a negative errno (libcamera's own convention) or -1.
typedef struct evc_lc_error {
    int code;
    char message[256];
} evc_lc_error;

/// A rectangle in sensor pixels (libcamera's Rectangle).
typedef struct evc_lc_rect {
    int32_t x, y;
    uint32_t width, height;
} evc_lc_rect;

/// libcamera's `properties::Location`.
enum { EVC_LC_LOCATION_UNKNOWN = -1, EVC_LC_LOCATION_FRONT = 0, EVC_LC_LOCATION_BACK = 1, EVC_LC_LOCATION_EXTERNAL = 2 };

/// One camera as the camera manager lists it.
typedef struct evc_lc_camera_info {
    char id[256];
    /// `properties::Model`, "" when the camera does not say.
    char model[128];
    /// `properties::Location`, EVC_LC_LOCATION_UNKNOWN when absent.
    int32_t location;
    /// 1 when libcamera's UVC pipeline handler drives it (a USB webcam): that handler alone
    /// calls every camera External, and the camera id ends in the USB `vendor:product`.
    int is_uvc;
    /// `properties::ScalerCropMaximum`, when has_scaler_crop_maximum.
    int has_scaler_crop_maximum;
    evc_lc_rect scaler_crop_maximum;
} evc_lc_camera_info;

/// libcamera's ControlType, for the kinds this program reads.
enum {
    EVC_LC_TYPE_NONE = 0, EVC_LC_TYPE_BOOL = 1, EVC_LC_TYPE_BYTE = 2, EVC_LC_TYPE_INT32 = 3, EVC_LC_TYPE_INT64 = 4,
    EVC_LC_TYPE_FLOAT = 5, EVC_LC_TYPE_STRING = 6, EVC_LC_TYPE_RECTANGLE = 7, EVC_LC_TYPE_SIZE = 8, EVC_LC_TYPE_OTHER = 99
};

#define EVC_LC_MAX_VALUES 32

/// One control a camera accepts (`Camera::controls()`), with its range.
typedef struct evc_lc_control {
    uint32_t id;
    char name[64];
    int type;
    /// Numeric types (bool, byte, int32, int64, float).
    double minimum, maximum, default_value;
    /// Rectangle controls (ScalerCrop).
    evc_lc_rect minimum_rect, maximum_rect, default_rect;
    /// The enumerated values of a menu-like control (AfMode), the first EVC_LC_MAX_VALUES.
    int value_count;
    int32_t values[EVC_LC_MAX_VALUES];
} evc_lc_control;

/// A format the camera offers for video (`StreamRole::VideoRecording`): a fourcc and a size.
typedef struct evc_lc_format {
    uint32_t fourcc;
    uint32_t width, height;
} evc_lc_format;

/// libcamera's StreamRole, for the streams asked of a camera.
enum { EVC_LC_ROLE_RAW = 0, EVC_LC_ROLE_STILL_CAPTURE = 1, EVC_LC_ROLE_VIDEO_RECORDING = 2, EVC_LC_ROLE_VIEWFINDER = 3 };

/// libcamera's CameraConfiguration::Status.
enum { EVC_LC_CONFIG_VALID = 0, EVC_LC_CONFIG_ADJUSTED = 1, EVC_LC_CONFIG_INVALID = 2 };

/// The most streams asked of a camera at once: the capture stream and the live view's.
#define EVC_LC_MAX_STREAMS 2

/// One stream asked of a camera: its role, fourcc and size.
typedef struct evc_lc_stream_request {
    int role;
    uint32_t fourcc;
    uint32_t width, height;
} evc_lc_stream_request;

/// A stream as configured (after libcamera adjusted it), or as validate() proposes it.
typedef struct evc_lc_stream_config {
    uint32_t fourcc;
    uint32_t width, height, stride, frame_size;
    uint32_t buffer_count;
} evc_lc_stream_config;

/// One completed frame. `planes[i]` are valid only during the callback (mapped dmabufs).
typedef struct evc_lc_frame {
    int plane_count;
    const uint8_t *planes[3];
    size_t plane_bytes[3];
    /// `controls::SensorTimestamp` (ns, CLOCK_MONOTONIC); 0 when absent.
    int64_t sensor_timestamp_ns;
    /// FrameMetadata::timestamp of the buffer (ns).
    uint64_t buffer_timestamp_ns;
    uint32_t sequence;
    /// `controls::ExposureTime` the camera reported for the frame (µs); 0 when absent.
    int64_t exposure_time_us;
    /// 0 when the frame is good (FrameMetadata::FrameSuccess), else an error or cancelled frame.
    int status;
    /// With two streams configured: the second stream's buffer of the same request (same
    /// sensor_timestamp_ns, sequence its own), valid as long as this frame; else NULL.
    const struct evc_lc_frame *second;
} evc_lc_frame;

typedef struct evc_lc_manager evc_lc_manager;
typedef struct evc_lc_camera evc_lc_camera;

/// A camera appeared (added = 1) or went away (added = 0). Called on libcamera's thread.
typedef void (*evc_lc_hotplug_callback)(void *context, const char *camera_id, int added);
/// A frame completed. Called on libcamera's thread; must not block for long. A frame with
/// a negative status and no planes says the stream failed (a request could not be queued
/// again, or handling a completed request threw): no more frames will come until the
/// stream is started again.
typedef void (*evc_lc_frame_callback)(void *context, const evc_lc_frame *frame);

/// The version of this interface: the loader refuses a bridge built with another one
/// (raised at every change of a signature or a struct below).
#define EVC_LC_BRIDGE_INTERFACE 5
/// The bridge's EVC_LC_BRIDGE_INTERFACE.
int evc_lc_bridge_interface(void);

/// The libcamera version the bridge was compiled against ("0.0.3").
const char *evc_lc_compiled_version(void);

/// Writes `message` through the filter libcamera's log goes to once the manager started
/// (its ERROR and FATAL lines to stderr), as libcamera's own threads write to it: one call
/// per message, from any thread.
void evc_lc_log_write(const char *message);

/// Starts libcamera's camera manager (one per process). nil on failure, with `error` filled.
evc_lc_manager *evc_lc_manager_start(evc_lc_hotplug_callback hotplug, void *context, evc_lc_error *error);
/// Stops the manager; every camera opened from it must be closed first.
void evc_lc_manager_stop(evc_lc_manager *manager);
/// The running library's version, as the manager reports it.
const char *evc_lc_manager_version(evc_lc_manager *manager);

/// Fills up to `capacity` cameras; returns how many there are (possibly more than capacity).
size_t evc_lc_cameras(evc_lc_manager *manager, evc_lc_camera_info *out, size_t capacity);
/// The controls of camera `id`: up to `capacity`, total in *count. 0 or a negative code.
int evc_lc_camera_controls(evc_lc_manager *manager, const char *id, evc_lc_control *out, size_t capacity,
                           size_t *count, evc_lc_error *error);
/// The camera's properties as "Name = value" lines into `buffer` (NUL-terminated, truncated).
int evc_lc_camera_properties(evc_lc_manager *manager, const char *id, char *buffer, size_t length,
                             evc_lc_error *error);
/// The video formats of camera `id`: up to `capacity`, total in *count.
int evc_lc_camera_formats(evc_lc_manager *manager, const char *id, evc_lc_format *out, size_t capacity,
                          size_t *count, evc_lc_error *error);

/// What camera `id` makes of `count` streams (1..EVC_LC_MAX_STREAMS) asked together, without
/// acquiring it: generateConfiguration with their roles, each stream set as asked (a stream it
/// did not generate is added), validate(). *status is an EVC_LC_CONFIG_ value; `proposed`
/// gets the streams as validate() left them, *proposed_count of them (fewer than asked when
/// the camera dropped some).
int evc_lc_camera_validate(evc_lc_manager *manager, const char *id, const evc_lc_stream_request *streams, size_t count,
                           int *status, evc_lc_stream_config *proposed, size_t *proposed_count, evc_lc_error *error);

/// Acquires camera `id` for this process. nil on failure.
evc_lc_camera *evc_lc_camera_open(evc_lc_manager *manager, const char *id, evc_lc_error *error);
/// Configures `count` streams (1..EVC_LC_MAX_STREAMS) in one CameraConfiguration (a stream
/// the camera would drop or give another fourcc is refused; sizes as libcamera adjusts them),
/// allocates each stream's buffers once, maps them and makes the requests that will be
/// recycled, each carrying one buffer of every stream. `out` gets `count` configurations.
/// Only while stopped.
int evc_lc_camera_configure(evc_lc_camera *camera, const evc_lc_stream_request *streams, size_t count,
                            uint32_t buffer_count, evc_lc_stream_config *out, evc_lc_error *error);
/// Starts streaming: every completed frame goes to `callback`, then its request is queued
/// again. With no callback, completed frames wait for evc_lc_camera_next_frame instead.
int evc_lc_camera_start(evc_lc_camera *camera, evc_lc_frame_callback callback, void *context,
                        evc_lc_error *error);
/// Without a callback: waits at most `timeout_ms` for the next completed frame and lends it
/// (its planes stay valid, and its request out of the camera, until evc_lc_camera_requeue).
/// -ETIMEDOUT when none came, -ENODEV once the camera was disconnected (unplugged), -EPIPE
/// when not streaming, libcamera's code once the stream failed on its thread (a request not
/// queued again, an exception in the completion handler). One frame at a time.
int evc_lc_camera_next_frame(evc_lc_camera *camera, int timeout_ms, evc_lc_frame *frame, evc_lc_error *error);
/// Gives the frame lent by evc_lc_camera_next_frame back: its request is queued again (with
/// the controls set since); libcamera's code when it refuses it.
int evc_lc_camera_requeue(evc_lc_camera *camera, evc_lc_error *error);
/// Stops streaming; no callback runs after it returns.
int evc_lc_camera_stop(evc_lc_camera *camera, evc_lc_error *error);
/// Sets a control on the next request queued (int32/int64/bool controls, float controls and
/// rectangle controls each have their call). Unknown ids are refused.
int evc_lc_camera_set_int(evc_lc_camera *camera, uint32_t id, int64_t value, evc_lc_error *error);
int evc_lc_camera_set_float(evc_lc_camera *camera, uint32_t id, float value, evc_lc_error *error);
int evc_lc_camera_set_rect(evc_lc_camera *camera, uint32_t id, evc_lc_rect value, evc_lc_error *error);
/// Stops if needed, frees the buffers and releases the camera.
void evc_lc_camera_close(evc_lc_camera *camera);

#ifdef __cplusplus
}
#endif
#endif
