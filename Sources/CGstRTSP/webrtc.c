// WebRTC for the live view's WHEP endpoint (docs/live-view.md#webrtc): one webrtcbin per
// viewer (GStreamer's, in gstreamer1.0-plugins-bad, with libnice from gstreamer1.0-nice),
// which does ICE, DTLS-SRTP and the RTP packets; this file only builds the pipeline, answers
// the viewer's offer and feeds it H.264 access units. GStreamer is opened with dlopen on the
// first offer, as rtsp.c does for RTSP (gstloader.h), and its types and functions are
// declared here, checked against the real headers by Tests/RTSPTests (EVC_GST_WITH_HEADERS).
#include "CGstRTSP.h"
#include "gstloader.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#ifndef EVC_GST_WITH_HEADERS
typedef struct _GParamSpec GParamSpec;
typedef struct _GstPad GstPad;
typedef struct _GstEvent GstEvent;
typedef struct _GstStructure GstStructure;
typedef struct _GstCaps GstCaps;
typedef struct _GstPromise GstPromise;
typedef struct _GstBus GstBus;
typedef struct _GstPadProbeInfo GstPadProbeInfo;
typedef struct _GstSDPMessage GstSDPMessage;
typedef struct _GstWebRTCRTPTransceiver GstWebRTCRTPTransceiver;
typedef struct _GstWebRTCICE GstWebRTCICE;
typedef int GstState;
typedef enum { GST_STATE_CHANGE_FAILURE = 0 } GstStateChangeReturn;
typedef enum { GST_PROMISE_RESULT_REPLIED = 2 } GstPromiseResult;
typedef enum { GST_SDP_OK = 0 } GstSDPResult;
typedef enum { GST_PAD_PROBE_OK = 1 } GstPadProbeReturn;
typedef enum { GST_PAD_PROBE_TYPE_EVENT_UPSTREAM = 1 << 7 } GstPadProbeType;
typedef GstPadProbeReturn (*GstPadProbeCallback)(GstPad *pad, GstPadProbeInfo *info, gpointer user_data);
typedef void (*GDestroyNotify)(gpointer data);
typedef enum { GST_WEBRTC_SDP_TYPE_OFFER = 1, GST_WEBRTC_SDP_TYPE_ANSWER = 3 } GstWebRTCSDPType;
typedef uint64_t GstClockTime;
#define GST_CLOCK_TIME_NONE ((GstClockTime)-1)
typedef struct _GstWebRTCSessionDescription {
    GstWebRTCSDPType type;
    GstSDPMessage *sdp;
} GstWebRTCSessionDescription;
#define GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY 2
#define GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE 2
#define GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED 2
#define GST_WEBRTC_PEER_CONNECTION_STATE_FAILED 4
#define GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED 5
#endif

enum { W_GLIB, W_GOBJECT, W_GST, W_GSTAPP, W_GSTSDP, W_GSTWEBRTC, W_LIBRARIES };
static const char *const w_sonames[W_LIBRARIES] = {
    "libglib-2.0.so.0",     "libgobject-2.0.so.0", "libgstreamer-1.0.so.0",
    "libgstapp-1.0.so.0",   "libgstsdp-1.0.so.0",  "libgstwebrtc-1.0.so.0",
};

// X(library, return type, name, parameters)
#define EVC_WEBRTC_FUNCTIONS(X) \
    X(W_GLIB, void, g_free, (gpointer mem)) \
    X(W_GLIB, void, g_error_free, (GError *error)) \
    X(W_GOBJECT, gulong, g_signal_connect_data, (gpointer instance, const gchar *detailed_signal, GCallback c_handler, gpointer data, GClosureNotify destroy_data, GConnectFlags connect_flags)) \
    X(W_GOBJECT, void, g_signal_emit_by_name, (gpointer instance, const gchar *detailed_signal, ...)) \
    X(W_GOBJECT, void, g_object_get, (gpointer object, const gchar *first_property_name, ...)) \
    X(W_GOBJECT, void, g_object_set, (gpointer object, const gchar *first_property_name, ...)) \
    X(W_GST, GstElement *, gst_parse_launch, (const gchar *pipeline_description, GError **error)) \
    X(W_GST, GstElement *, gst_bin_get_by_name, (GstBin *bin, const gchar *name)) \
    X(W_GST, GstStateChangeReturn, gst_element_set_state, (GstElement *element, GstState state)) \
    X(W_GST, GstPad *, gst_element_get_static_pad, (GstElement *element, const gchar *name)) \
    X(W_GST, GstBus *, gst_element_get_bus, (GstElement *element)) \
    X(W_GST, void, gst_bus_set_flushing, (GstBus *bus, gboolean flushing)) \
    X(W_GST, void, gst_object_unref, (gpointer object)) \
    X(W_GST, gulong, gst_pad_add_probe, (GstPad *pad, GstPadProbeType mask, GstPadProbeCallback callback, gpointer user_data, GDestroyNotify destroy_data)) \
    X(W_GST, GstEvent *, gst_pad_probe_info_get_event, (GstPadProbeInfo *info)) \
    X(W_GST, const GstStructure *, gst_event_get_structure, (GstEvent *event)) \
    X(W_GST, gboolean, gst_structure_has_name, (const GstStructure *structure, const gchar *name)) \
    X(W_GST, gboolean, gst_structure_has_field, (const GstStructure *structure, const gchar *fieldname)) \
    X(W_GST, gboolean, gst_structure_get, (const GstStructure *structure, const char *first_fieldname, ...)) \
    X(W_GST, gchar *, gst_structure_to_string, (const GstStructure *structure)) \
    X(W_GST, GstCaps *, gst_caps_from_string, (const gchar *string)) \
    X(W_GST, GstPromise *, gst_promise_new, (void)) \
    X(W_GST, GstPromiseResult, gst_promise_wait, (GstPromise *promise)) \
    X(W_GST, const GstStructure *, gst_promise_get_reply, (GstPromise *promise)) \
    X(W_GST, void, gst_mini_object_unref, (GstMiniObject *mini_object)) \
    X(W_GST, GstBuffer *, gst_buffer_new_memdup, (gconstpointer data, gsize size)) \
    X(W_GST, GstClockTime, gst_element_get_base_time, (GstElement *element)) \
    X(W_GSTAPP, GstFlowReturn, gst_app_src_push_buffer, (GstAppSrc *appsrc, GstBuffer *buffer)) \
    X(W_GSTSDP, GstSDPResult, gst_sdp_message_new_from_text, (const gchar *text, GstSDPMessage **msg)) \
    X(W_GSTSDP, gchar *, gst_sdp_message_as_text, (const GstSDPMessage *msg)) \
    X(W_GSTWEBRTC, GType, gst_webrtc_session_description_get_type, (void)) \
    X(W_GSTWEBRTC, GstWebRTCSessionDescription *, gst_webrtc_session_description_new, (GstWebRTCSDPType type, GstSDPMessage *sdp)) \
    X(W_GSTWEBRTC, void, gst_webrtc_session_description_free, (GstWebRTCSessionDescription *desc))

// Where GST_BUFFER_PTS is: after the GstMiniObject (64 bytes) and the pool pointer, on the
// 64-bit ABIs (x86_64, arm64); checked against the real headers below.
#define EVC_GST_BUFFER_PTS_OFFSET (8 * sizeof(void *) + sizeof(void *))

#ifdef EVC_GST_WITH_HEADERS
#define EVC_DECLARE(lib, ret, name, params) ret name params;
EVC_WEBRTC_FUNCTIONS(EVC_DECLARE)
_Static_assert(GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY == 2 && GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE == 2,
               "webrtc enums");
_Static_assert(GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED == 2 && GST_WEBRTC_PEER_CONNECTION_STATE_FAILED == 4 &&
                   GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED == 5,
               "peer connection states");
_Static_assert(GST_WEBRTC_SDP_TYPE_OFFER == 1 && GST_WEBRTC_SDP_TYPE_ANSWER == 3 && GST_PROMISE_RESULT_REPLIED == 2 &&
                   GST_SDP_OK == 0 && GST_PAD_PROBE_OK == 1 && GST_PAD_PROBE_TYPE_EVENT_UPSTREAM == 1 << 7 &&
                   GST_STATE_CHANGE_FAILURE == 0 && GST_STATE_NULL == 1,
               "GStreamer constants");
_Static_assert(offsetof(GstWebRTCSessionDescription, sdp) == sizeof(void *), "GstWebRTCSessionDescription");
_Static_assert(offsetof(GstBuffer, pts) == EVC_GST_BUFFER_PTS_OFFSET, "GstBuffer's pts (GST_BUFFER_PTS)");
#endif

#define EVC_FIELD(lib, ret, name, params) ret(*name) params;
static struct {
    EVC_WEBRTC_FUNCTIONS(EVC_FIELD)
} w;

static pthread_once_t w_once = PTHREAD_ONCE_INIT;
static char w_load_error[512];
static int w_load_result = -1;

static void w_load(void) {
#define EVC_SYMBOL(lib, ret, name, params) {lib, #name, (void **)&w.name},
    static const evc_gst_symbol symbols[] = {EVC_WEBRTC_FUNCTIONS(EVC_SYMBOL)};
    w_load_result =
        evc_gst_open(w_sonames, W_LIBRARIES, symbols, sizeof symbols / sizeof symbols[0],
                     "gstreamer1.0-plugins-base, -good, -bad and gstreamer1.0-nice", w_load_error, sizeof w_load_error);
}

int evc_webrtc_load(char *error, size_t error_size) {
    pthread_once(&w_once, w_load);
    if (w_load_result != 0 && error && error_size) snprintf(error, error_size, "%s", w_load_error);
    return w_load_result;
}

// Shared by the caller's thread (pushes) and webrtcbin's (signals, probes): flags only,
// read and written atomically; the pipeline is stopped before the session is freed.
struct evc_webrtc_session {
    GstElement *pipeline;
    GstElement *webrtc;
    GstElement *appsrc;
    int connected;
    int closed;  // 0, or an evc_webrtc_end reason (the first one seen)
    int keyframe;
    int64_t heard_ns;  // CLOCK_MONOTONIC: the viewer's last RTCP, or the connection's start
    GstClockTime base_time;  // the pipeline's, once playing (its clock: GStreamer's system clock, CLOCK_MONOTONIC)
    GstClockTime last_pts;   // the feeder thread's alone
};

/// A viewer whose RTCP stops this long is gone (a browser sends a report about every second).
#define EVC_WEBRTC_SILENCE_NS (15LL * 1000 * 1000 * 1000)

static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/// The session's end, the first reason only.
static void end_session(evc_webrtc_session *s, int reason) {
    int none = 0;
    __atomic_compare_exchange_n(&s->closed, &none, reason, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void on_connection_state(GstElement *webrtc, GParamSpec *spec, gpointer data) {
    (void)spec;
    evc_webrtc_session *s = data;
    int state = 0;
    w.g_object_get(webrtc, "connection-state", &state, NULL);
    if (state == GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED) {
        // The picture starts now, at a keyframe: what was pushed before went nowhere.
        __atomic_store_n(&s->heard_ns, monotonic_ns(), __ATOMIC_RELEASE);
        __atomic_store_n(&s->keyframe, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&s->connected, 1, __ATOMIC_RELEASE);
    } else if (state == GST_WEBRTC_PEER_CONNECTION_STATE_FAILED || state == GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED) {
        end_session(s, state == GST_WEBRTC_PEER_CONNECTION_STATE_FAILED ? EVC_WEBRTC_FAILED : EVC_WEBRTC_CLOSED);
    }
}

// The viewer said goodbye (RTCP BYE: its peer connection closed).
static void on_viewer_bye(GstElement *rtpbin, guint session, guint ssrc, gpointer data) {
    (void)rtpbin;
    (void)session;
    (void)ssrc;
    end_session(data, EVC_WEBRTC_BYE);
}

// The viewer's RTCP came (a receiver report, feedback): it is still there. Its silence ends
// the session (a browser killed, a phone gone off the network), since webrtcbin 1.22 does
// not fail a connection whose peer went silent. Not RTP's per-source timeout (rtpbin's
// on-timeout): that fires for any one SSRC of the session that stops, and with Chromium it
// fired 15 s into every session while the browser's reports went on coming and it played.
static void on_viewer_heard(GstElement *rtpbin, guint session, guint ssrc, gpointer data) {
    (void)rtpbin;
    (void)session;
    (void)ssrc;
    evc_webrtc_session *s = data;
    __atomic_store_n(&s->heard_ns, monotonic_ns(), __ATOMIC_RELEASE);
}

// The viewer lost a picture and asked for a keyframe (RTCP PLI or FIR): the payloader sends
// it upstream as GstForceKeyUnit.
static GstPadProbeReturn on_upstream_event(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    evc_webrtc_session *s = data;
    GstEvent *event = w.gst_pad_probe_info_get_event(info);
    const GstStructure *structure = event ? w.gst_event_get_structure(event) : NULL;
    if (structure && w.gst_structure_has_name(structure, "GstForceKeyUnit")) __atomic_store_n(&s->keyframe, 1, __ATOMIC_RELEASE);
    return GST_PAD_PROBE_OK;
}

/// Waits for a promise's reply; 0, or -1 with the reply's error (or its absence) in `error`.
static int await_promise(GstPromise *promise, const char *what, const GstStructure **reply, char *error, size_t error_size) {
    if (w.gst_promise_wait(promise) != GST_PROMISE_RESULT_REPLIED) {
        snprintf(error, error_size, "%s: no reply", what);
        return -1;
    }
    const GstStructure *r = w.gst_promise_get_reply(promise);
    if (r && w.gst_structure_has_field(r, "error")) {
        gchar *text = w.gst_structure_to_string(r);
        snprintf(error, error_size, "%s: %s", what, text ? text : "error");
        w.g_free(text);
        return -1;
    }
    if (reply) *reply = r;
    return 0;
}

static int valid_server(const char *url) {
    if (!url) return 1;
    for (const char *c = url; *c; c++) {
        if (*c <= ' ' || *c == '"' || *c == '\\' || *c == '!' || *c == '\'') return 0;
    }
    return 1;
}

evc_webrtc_session *evc_webrtc_answer(const char *offer, int payload_type, const char *local_address, const char *stun_server, const char *turn_server,
                                      int timeout_ms, char **answer, char *error, size_t error_size) {
    *answer = NULL;
    if (evc_webrtc_load(error, error_size) != 0) return NULL;
    if (payload_type < 96 || payload_type > 127 || !valid_server(stun_server) || !valid_server(turn_server)) {
        snprintf(error, error_size, "invalid payload type or server");
        return NULL;
    }
    GstSDPMessage *sdp = NULL;
    if (w.gst_sdp_message_new_from_text(offer, &sdp) != GST_SDP_OK || !sdp) {
        snprintf(error, error_size, "the offer is not SDP");
        return NULL;
    }
    GstWebRTCSessionDescription *remote = w.gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, sdp);

    // appsrc: a live source of H.264 access units, each timestamped with its camera frame's
    // capture time (evc_webrtc_push), at most 2 MB queued (the oldest dropped); h264parse puts
    // SPS and PPS before each IDR frame; the payloader makes RTP packets, one NAL unit or
    // fragment each, sent as soon as made, their RTP timestamp the frame's capture time.
    // The picture's SSRC, random (RFC 3550 8.1) and never 0.
    unsigned ssrc = 0;
    while (ssrc == 0) {
        // (When getrandom fails, interrupted or on a kernel without it: the clock's low bits.)
        if (getrandom(&ssrc, sizeof ssrc, 0) != sizeof ssrc) ssrc = (unsigned)monotonic_ns();
    }
    char launch[1024];
    snprintf(launch, sizeof launch,
             "appsrc name=src is-live=true format=time max-bytes=2000000 leaky-type=downstream "
             "caps=video/x-h264,stream-format=byte-stream,alignment=au "
             "! h264parse config-interval=-1 ! rtph264pay config-interval=-1 aggregate-mode=zero-latency pt=%d ssrc=%u "
             "! webrtcbin name=webrtc bundle-policy=max-bundle%s%s%s%s",
             payload_type, ssrc, stun_server ? " stun-server=" : "", stun_server ? stun_server : "",
             turn_server ? " turn-server=" : "", turn_server ? turn_server : "");
    GError *parse_error = NULL;
    GstElement *pipeline = w.gst_parse_launch(launch, &parse_error);
    if (!pipeline || parse_error) {
        snprintf(error, error_size, "cannot make the pipeline (is gstreamer1.0-nice installed?): %s",
                 parse_error ? parse_error->message : "no reason given");
        if (parse_error) w.g_error_free(parse_error);
        if (pipeline) w.gst_object_unref(pipeline);
        w.gst_webrtc_session_description_free(remote);
        return NULL;
    }
    evc_webrtc_session *s = calloc(1, sizeof *s);
    s->pipeline = pipeline;
    s->webrtc = w.gst_bin_get_by_name((GstBin *)pipeline, "webrtc");
    s->appsrc = w.gst_bin_get_by_name((GstBin *)pipeline, "src");
    // Nobody reads the pipeline's messages: they are dropped, not kept without bound.
    GstBus *bus = w.gst_element_get_bus(pipeline);
    w.gst_bus_set_flushing(bus, 1);
    w.gst_object_unref(bus);

    // Host candidates on the address the live view listens on (all of the machine's for
    // 0.0.0.0 or ::), UDP only.
    GstWebRTCICE *ice = NULL;
    w.g_object_get(s->webrtc, "ice-agent", &ice, NULL);
    if (ice) {
        w.g_object_set(ice, "ice-tcp", 0, NULL);
        if (local_address) {
            gboolean added = 0;
            w.g_signal_emit_by_name(ice, "add-local-ip-address", local_address, &added);
        }
        w.gst_object_unref(ice);
    }
    // The answer's one video: sending only, H.264 with the offer's own payload type (and so
    // the profile-level-id offered with it), keyframes asked for with PLI, and a lost packet
    // sent again on NACK (do-nack: webrtcbin's RTX, RFC 4588, when the offer has it), so
    // that one packet lost on Wi-Fi costs a packet, not a keyframe. The preference names no
    // profile: held to the offered one, the payloader would refuse the encoder's own (often
    // High; browsers decode it whatever the SDP says) and no frame would pass. It names the
    // payloader's SSRC: the answer is made before any packet, and without it webrtcbin 1.22
    // groups the RTX SSRC with SSRC 0, and Chromium decodes frames its <video> never gets.
    GstWebRTCRTPTransceiver *transceiver = NULL;
    w.g_signal_emit_by_name(s->webrtc, "get-transceiver", 0, &transceiver);
    if (transceiver) {
        char caps_text[512];
        snprintf(caps_text, sizeof caps_text,
                 "application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=%d,ssrc=(uint)%u,"
                 "packetization-mode=(string)1,rtcp-fb-nack-pli=(boolean)true,rtcp-fb-nack=(boolean)true",
                 payload_type, ssrc);
        GstCaps *caps = w.gst_caps_from_string(caps_text);
        w.g_object_set(transceiver, "direction", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, "codec-preferences", caps,
                       "do-nack", 1, NULL);
        if (caps) w.gst_mini_object_unref((GstMiniObject *)caps);
        w.gst_object_unref(transceiver);
    }
    w.g_signal_connect_data(s->webrtc, "notify::connection-state", (GCallback)on_connection_state, s, NULL,
                            (GConnectFlags)0);
    GstElement *rtpbin = w.gst_bin_get_by_name((GstBin *)s->webrtc, "rtpbin");
    if (rtpbin) {
        w.g_signal_connect_data(rtpbin, "on-ssrc-active", (GCallback)on_viewer_heard, s, NULL, (GConnectFlags)0);
        w.g_signal_connect_data(rtpbin, "on-bye-ssrc", (GCallback)on_viewer_bye, s, NULL, (GConnectFlags)0);
        w.gst_object_unref(rtpbin);
    }
    GstPad *pad = w.gst_element_get_static_pad(s->appsrc, "src");
    if (pad) {
        w.gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_upstream_event, s, NULL);
        w.gst_object_unref(pad);
    }
    if (w.gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        snprintf(error, error_size, "the pipeline does not start");
        goto fail;
    }
    s->base_time = w.gst_element_get_base_time(pipeline);
    s->last_pts = GST_CLOCK_TIME_NONE;

    GstPromise *promise = w.gst_promise_new();
    w.g_signal_emit_by_name(s->webrtc, "set-remote-description", remote, promise);
    int failed = await_promise(promise, "the offer", NULL, error, error_size);
    w.gst_mini_object_unref((GstMiniObject *)promise);
    if (failed) goto fail;

    promise = w.gst_promise_new();
    w.g_signal_emit_by_name(s->webrtc, "create-answer", NULL, promise);
    const GstStructure *reply = NULL;
    GstWebRTCSessionDescription *local = NULL;
    failed = await_promise(promise, "the answer", &reply, error, error_size);
    if (!failed && reply)
        w.gst_structure_get(reply, "answer", w.gst_webrtc_session_description_get_type(), &local, NULL);
    w.gst_mini_object_unref((GstMiniObject *)promise);
    if (failed || !local) {
        if (!failed) snprintf(error, error_size, "no answer to the offer (no H.264 video in it?)");
        goto fail;
    }
    promise = w.gst_promise_new();
    w.g_signal_emit_by_name(s->webrtc, "set-local-description", local, promise);
    failed = await_promise(promise, "the answer", NULL, error, error_size);
    w.gst_mini_object_unref((GstMiniObject *)promise);
    w.gst_webrtc_session_description_free(local);
    if (failed) goto fail;

    // No trickle ICE: the answer goes out with every candidate, once gathering is complete
    // (host candidates take milliseconds; a STUN or TURN server, up to `timeout_ms`).
    struct timespec pause = {0, 10 * 1000 * 1000};
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        int state = 0;
        w.g_object_get(s->webrtc, "ice-gathering-state", &state, NULL);
        if (state == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE) break;
        nanosleep(&pause, NULL);
    }
    GstWebRTCSessionDescription *description = NULL;
    w.g_object_get(s->webrtc, "local-description", &description, NULL);
    if (!description) {
        snprintf(error, error_size, "no local description");
        goto fail;
    }
    gchar *text = w.gst_sdp_message_as_text(description->sdp);
    w.gst_webrtc_session_description_free(description);
    *answer = text ? strdup(text) : NULL;
    w.g_free(text);
    w.gst_webrtc_session_description_free(remote);
    return s;

fail:
    w.gst_webrtc_session_description_free(remote);
    evc_webrtc_free(s);
    return NULL;
}

int evc_webrtc_push(evc_webrtc_session *s, const uint8_t *bytes, size_t size, int64_t capture_us) {
    if (__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE)) return -1;
    // Until the connection is up, frames would only be dropped inside webrtcbin.
    if (!__atomic_load_n(&s->connected, __ATOMIC_ACQUIRE)) return 1;
    GstBuffer *buffer = w.gst_buffer_new_memdup(bytes, size);
    // The capture time as the pipeline's running time (both CLOCK_MONOTONIC), as a camera
    // source in GStreamer stamps its buffers: the RTP timestamps then space the frames as the
    // camera took them, not as the encoder finished them. Never before the pipeline started
    // (a camera's replayed keyframe run is older) and always rising. A time ahead of now is
    // taken as now: webrtcbin's sink holds a buffer until its time, and a driver that stamps
    // the end of a frame may stamp it before it ends (vivid's "End of Frame" stamps are most
    // of a frame interval ahead when it hands the frame over): the frame goes at once. One
    // over 5 s old is not on CLOCK_MONOTONIC and is replaced by the moment of the push.
    int64_t now = monotonic_ns(), age = now - capture_us * 1000;
    GstClockTime capture = capture_us > 0 && age > 0 && age < 5000000000LL ? (GstClockTime)capture_us * 1000 : (GstClockTime)now;
    GstClockTime pts = capture > s->base_time ? capture - s->base_time : 0;
    if (s->last_pts != GST_CLOCK_TIME_NONE && pts <= s->last_pts) pts = s->last_pts + 1000;
    s->last_pts = pts;
    *(GstClockTime *)((char *)buffer + EVC_GST_BUFFER_PTS_OFFSET) = pts;
    return w.gst_app_src_push_buffer((GstAppSrc *)s->appsrc, buffer) == GST_FLOW_OK ? 0 : 1;
}

int evc_webrtc_take_keyframe_request(evc_webrtc_session *s) { return __atomic_exchange_n(&s->keyframe, 0, __ATOMIC_ACQ_REL); }

int evc_webrtc_connected(evc_webrtc_session *s) { return __atomic_load_n(&s->connected, __ATOMIC_ACQUIRE); }

int evc_webrtc_closed(evc_webrtc_session *s) {
    if (__atomic_load_n(&s->connected, __ATOMIC_ACQUIRE) &&
        monotonic_ns() - __atomic_load_n(&s->heard_ns, __ATOMIC_ACQUIRE) > EVC_WEBRTC_SILENCE_NS)
        end_session(s, EVC_WEBRTC_TIMED_OUT);
    return __atomic_load_n(&s->closed, __ATOMIC_ACQUIRE);
}

const char *evc_webrtc_end_reason(int reason) {
    switch (reason) {
    case EVC_WEBRTC_FAILED: return "its connection failed (ICE or DTLS)";
    case EVC_WEBRTC_CLOSED: return "closed its connection";
    case EVC_WEBRTC_BYE: return "said goodbye (RTCP BYE)";
    case EVC_WEBRTC_TIMED_OUT: return "went silent (no RTCP for 15 s)";
    default: return "ended";
    }
}

void evc_webrtc_free(evc_webrtc_session *s) {
    if (!s) return;
    // Stopped first: no signal or probe runs once it returns.
    w.gst_element_set_state(s->pipeline, GST_STATE_NULL);
    if (s->appsrc) w.gst_object_unref(s->appsrc);
    if (s->webrtc) w.gst_object_unref(s->webrtc);
    w.gst_object_unref(s->pipeline);
    free(s);
}
