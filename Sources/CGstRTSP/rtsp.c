// The RTSP server on Debian's gst-rtsp-server, with GStreamer's libraries opened with dlopen
// on first use instead of linked (as Sources/CFFmpeg/loader.c does for FFmpeg): linked, every
// start of the daemon would map and relocate GStreamer and GLib's object system, in a daemon
// that may never serve RTSP.
//
// GStreamer's headers live under /usr/include/gstreamer-1.0 and GLib's under an
// architecture's lib directory, which a package cannot name portably; so the few types and
// functions used here are declared below, each with the prototype of GStreamer 1.22's and
// GLib 2.74's headers (the versions of Debian 12; 13 has the same ABI: GStreamer and GLib
// keep it for their whole major version). Objects are opaque pointers; the constants are
// the headers' values. Tests/LiveH264Tests/RTSPShimTests.swift compiles this file against
// the real headers, so a prototype that differs is a compile error there.
#include "CGstRTSP.h"
#include "gstloader.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EVC_GST_WITH_HEADERS
typedef struct _GMainContext GMainContext;
typedef struct _GMainLoop GMainLoop;
typedef struct _GSource GSource;
typedef gboolean (*GSourceFunc)(gpointer user_data);
typedef void (*GDestroyNotify)(gpointer data);
typedef struct _GstRTSPServer GstRTSPServer;
typedef struct _GstRTSPMountPoints GstRTSPMountPoints;
typedef struct _GstRTSPMediaFactory GstRTSPMediaFactory;
typedef struct _GstRTSPMedia GstRTSPMedia;
typedef struct _GstRTSPAuth GstRTSPAuth;
typedef struct _GstRTSPToken GstRTSPToken;
typedef struct _GstRTSPSessionPool GstRTSPSessionPool;
typedef enum {
    GST_RTSP_LOWER_TRANS_UDP = 1 << 0,
    GST_RTSP_LOWER_TRANS_TCP = 1 << 2,
} GstRTSPLowerTrans;
typedef enum { GST_RTSP_AUTH_BASIC = 1, GST_RTSP_AUTH_DIGEST = 2 } GstRTSPAuthMethod;
#define G_TYPE_BOOLEAN ((GType)(5 << 2))
#define G_TYPE_STRING ((GType)(16 << 2))
#define GST_RTSP_TOKEN_MEDIA_FACTORY_ROLE "media.factory.role"
#define GST_RTSP_PERM_MEDIA_FACTORY_ACCESS "media.factory.access"
#define GST_RTSP_PERM_MEDIA_FACTORY_CONSTRUCT "media.factory.construct"
#define G_SOURCE_CONTINUE 1
#endif

// X(library, return type, name, parameters)
enum { GLIB, GOBJECT, GST, GSTAPP, GSTRTSPSERVER, LIBRARIES };
static const char *const sonames[LIBRARIES] = {
    "libglib-2.0.so.0", "libgobject-2.0.so.0", "libgstreamer-1.0.so.0", "libgstapp-1.0.so.0", "libgstrtspserver-1.0.so.0",
};

#define EVC_RTSP_FUNCTIONS(X) \
    X(GLIB, GMainContext *, g_main_context_new, (void)) \
    X(GLIB, void, g_main_context_unref, (GMainContext *context)) \
    X(GLIB, GMainLoop *, g_main_loop_new, (GMainContext *context, gboolean is_running)) \
    X(GLIB, void, g_main_loop_run, (GMainLoop *loop)) \
    X(GLIB, void, g_main_loop_quit, (GMainLoop *loop)) \
    X(GLIB, void, g_main_loop_unref, (GMainLoop *loop)) \
    X(GLIB, GSource *, g_timeout_source_new_seconds, (guint interval)) \
    X(GLIB, void, g_source_set_callback, (GSource *source, GSourceFunc func, gpointer data, GDestroyNotify notify)) \
    X(GLIB, guint, g_source_attach, (GSource *source, GMainContext *context)) \
    X(GLIB, void, g_source_destroy, (GSource *source)) \
    X(GLIB, void, g_source_unref, (GSource *source)) \
    X(GLIB, GSource *, g_main_context_find_source_by_id, (GMainContext *context, guint source_id)) \
    X(GLIB, void, g_free, (gpointer mem)) \
    X(GOBJECT, gulong, g_signal_connect_data, (gpointer instance, const gchar *detailed_signal, GCallback c_handler, gpointer data, GClosureNotify destroy_data, GConnectFlags connect_flags)) \
    X(GOBJECT, void, g_object_unref, (gpointer object)) \
    X(GST, GstElement *, gst_bin_get_by_name, (GstBin *bin, const gchar *name)) \
    X(GST, void, gst_object_unref, (gpointer object)) \
    X(GST, GstBuffer *, gst_buffer_new_memdup, (gconstpointer data, gsize size)) \
    X(GST, void, gst_mini_object_unref, (GstMiniObject *mini_object)) \
    X(GSTAPP, GstFlowReturn, gst_app_src_push_buffer, (GstAppSrc *appsrc, GstBuffer *buffer)) \
    X(GSTRTSPSERVER, GstRTSPServer *, gst_rtsp_server_new, (void)) \
    X(GSTRTSPSERVER, void, gst_rtsp_server_set_address, (GstRTSPServer *server, const gchar *address)) \
    X(GSTRTSPSERVER, void, gst_rtsp_server_set_service, (GstRTSPServer *server, const gchar *service)) \
    X(GSTRTSPSERVER, GstRTSPMountPoints *, gst_rtsp_server_get_mount_points, (GstRTSPServer *server)) \
    X(GSTRTSPSERVER, GstRTSPSessionPool *, gst_rtsp_server_get_session_pool, (GstRTSPServer *server)) \
    X(GSTRTSPSERVER, void, gst_rtsp_server_set_auth, (GstRTSPServer *server, GstRTSPAuth *auth)) \
    X(GSTRTSPSERVER, guint, gst_rtsp_server_attach, (GstRTSPServer *server, GMainContext *context)) \
    X(GSTRTSPSERVER, guint, gst_rtsp_session_pool_cleanup, (GstRTSPSessionPool *pool)) \
    X(GSTRTSPSERVER, void, gst_rtsp_mount_points_add_factory, (GstRTSPMountPoints *mounts, const gchar *path, GstRTSPMediaFactory *factory)) \
    X(GSTRTSPSERVER, GstRTSPMediaFactory *, gst_rtsp_media_factory_new, (void)) \
    X(GSTRTSPSERVER, void, gst_rtsp_media_factory_set_launch, (GstRTSPMediaFactory *factory, const gchar *launch)) \
    X(GSTRTSPSERVER, void, gst_rtsp_media_factory_set_shared, (GstRTSPMediaFactory *factory, gboolean shared)) \
    X(GSTRTSPSERVER, void, gst_rtsp_media_factory_set_protocols, (GstRTSPMediaFactory *factory, GstRTSPLowerTrans protocols)) \
    X(GSTRTSPSERVER, void, gst_rtsp_media_factory_add_role, (GstRTSPMediaFactory *factory, const gchar *role, const gchar *fieldname, ...)) \
    X(GSTRTSPSERVER, GstElement *, gst_rtsp_media_get_element, (GstRTSPMedia *media)) \
    X(GSTRTSPSERVER, GstRTSPAuth *, gst_rtsp_auth_new, (void)) \
    X(GSTRTSPSERVER, gchar *, gst_rtsp_auth_make_basic, (const gchar *user, const gchar *pass)) \
    X(GSTRTSPSERVER, void, gst_rtsp_auth_add_basic, (GstRTSPAuth *auth, const gchar *basic, GstRTSPToken *token)) \
    X(GSTRTSPSERVER, void, gst_rtsp_auth_add_digest, (GstRTSPAuth *auth, const gchar *user, const gchar *pass, GstRTSPToken *token)) \
    X(GSTRTSPSERVER, void, gst_rtsp_auth_set_supported_methods, (GstRTSPAuth *auth, GstRTSPAuthMethod methods)) \
    X(GSTRTSPSERVER, GstRTSPToken *, gst_rtsp_token_new, (const gchar *firstfield, ...))

#ifdef EVC_GST_WITH_HEADERS
// Checked against the headers: each declaration above must match the real one, and each
// constant the value written above.
#define EVC_DECLARE(lib, ret, name, params) ret name params;
EVC_RTSP_FUNCTIONS(EVC_DECLARE)
_Static_assert(G_TYPE_BOOLEAN == (GType)(5 << 2) && G_TYPE_STRING == (GType)(16 << 2), "GType fundamentals");
_Static_assert(GST_RTSP_LOWER_TRANS_UDP == 1 && GST_RTSP_LOWER_TRANS_TCP == 4, "GstRTSPLowerTrans");
_Static_assert(GST_RTSP_AUTH_BASIC == 1 && GST_RTSP_AUTH_DIGEST == 2, "GstRTSPAuthMethod");
_Static_assert(GST_STATE_PLAYING == 4 && GST_FLOW_OK == 0 && G_SOURCE_CONTINUE == 1 && G_CONNECT_AFTER == 1, "GStreamer constants");
_Static_assert(sizeof GST_RTSP_TOKEN_MEDIA_FACTORY_ROLE == sizeof "media.factory.role", "token field");
#endif

#define EVC_FIELD(lib, ret, name, params) ret(*name) params;
static struct {
    EVC_RTSP_FUNCTIONS(EVC_FIELD)
} gst;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512];
static int load_result = -1;

static void load(void) {
#define EVC_SYMBOL(lib, ret, name, params) {lib, #name, (void **)&gst.name},
    static const evc_gst_symbol symbols[] = {EVC_RTSP_FUNCTIONS(EVC_SYMBOL)};
    load_result = evc_gst_open(sonames, LIBRARIES, symbols, sizeof symbols / sizeof symbols[0],
                               "gstreamer1.0-rtsp and gstreamer1.0-plugins-base, -good, -bad", load_error, sizeof load_error);
}

int evc_rtsp_load(char *error, size_t error_size) {
    pthread_once(&once, load);
    if (load_result != 0 && error && error_size) snprintf(error, error_size, "%s", load_error);
    return load_result;
}

struct evc_rtsp_server {
    GMainContext *context;
    GMainLoop *loop;
    GstRTSPServer *server;
    guint attached;
    guint cleanup;
    evc_rtsp_media_callback on_media;
    void *callback_context;
};

// Shared by the server's thread (signals) and the feeder (pushes): the appsrc is referenced
// until both let go (`refs`); `closed` and `restart` are read and written atomically.
struct evc_rtsp_media {
    GstElement *appsrc;
    int refs;
    int closed;
    int ready;
    int restart;
};

static void media_unref(evc_rtsp_media *m) {
    if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        if (m->appsrc) gst.gst_object_unref(m->appsrc);
        free(m);
    }
}

static void media_notify(gpointer data, GClosure *closure) {
    (void)closure;
    media_unref(data);
}

// The pipeline wants data: it runs (the first time, the feeder starts at a keyframe).
static void on_need_data(GstElement *appsrc, guint length, gpointer data) {
    (void)appsrc;
    (void)length;
    evc_rtsp_media *m = data;
    if (!__atomic_exchange_n(&m->ready, 1, __ATOMIC_ACQ_REL)) __atomic_store_n(&m->restart, 1, __ATOMIC_RELEASE);
}

// PLAY: the client's picture starts at a keyframe.
static void on_new_state(GstRTSPMedia *media, gint state, gpointer data) {
    (void)media;
    evc_rtsp_media *m = data;
    if (state == GST_STATE_PLAYING) __atomic_store_n(&m->restart, 1, __ATOMIC_RELEASE);
}

static void on_unprepared(GstRTSPMedia *media, gpointer data) {
    (void)media;
    evc_rtsp_media *m = data;
    __atomic_store_n(&m->closed, 1, __ATOMIC_RELEASE);
}

static void on_media_configure(GstRTSPMediaFactory *factory, GstRTSPMedia *media, gpointer data) {
    (void)factory;
    evc_rtsp_server *s = data;
    GstElement *bin = gst.gst_rtsp_media_get_element(media);
    if (!bin) return;
    GstElement *appsrc = gst.gst_bin_get_by_name((GstBin *)bin, "src");
    gst.gst_object_unref(bin);
    if (!appsrc) return;
    evc_rtsp_media *m = calloc(1, sizeof *m);
    if (!m) {
        gst.gst_object_unref(appsrc);
        return;
    }
    m->appsrc = appsrc;
    // One reference for each of the media's signal handlers (released when the media is
    // finalised) and one for the feeder. The appsrc's handler holds none: the handle keeps
    // the appsrc, and the media is unprepared (its pipeline stopped, so no more need-data)
    // before it is finalised.
    m->refs = 3;
    gst.g_signal_connect_data(appsrc, "need-data", (GCallback)on_need_data, m, NULL, (GConnectFlags)0);
    gst.g_signal_connect_data(media, "new-state", (GCallback)on_new_state, m, media_notify, (GConnectFlags)0);
    gst.g_signal_connect_data(media, "unprepared", (GCallback)on_unprepared, m, media_notify, (GConnectFlags)0);
    s->on_media(s->callback_context, m);
}

static gboolean cleanup_sessions(gpointer data) {
    evc_rtsp_server *s = data;
    GstRTSPSessionPool *pool = gst.gst_rtsp_server_get_session_pool(s->server);
    if (pool) {
        gst.gst_rtsp_session_pool_cleanup(pool);
        gst.g_object_unref(pool);
    }
    return G_SOURCE_CONTINUE;
}

// appsrc: a live source of H.264 access units, timestamped as they are pushed, at most
// 2 MB queued (the oldest dropped: a client that paused, or a pipeline not playing yet);
// h264parse puts SPS and PPS before each IDR frame for clients that join; one RTP payloader.
static const char *const launch =
    "( appsrc name=src is-live=true format=time do-timestamp=true max-bytes=2000000 leaky-type=downstream "
    "caps=video/x-h264,stream-format=byte-stream,alignment=au "
    "! h264parse config-interval=-1 ! rtph264pay name=pay0 pt=96 config-interval=-1 )";

evc_rtsp_server *evc_rtsp_create(const char *address, int port, const char *path, const char *username,
                                 const char *password, evc_rtsp_media_callback on_media, void *context,
                                 char *error, size_t error_size) {
    if (evc_rtsp_load(error, error_size) != 0) return NULL;
    evc_rtsp_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    s->on_media = on_media;
    s->callback_context = context;
    s->context = gst.g_main_context_new();
    s->loop = gst.g_main_loop_new(s->context, 0);
    s->server = gst.gst_rtsp_server_new();
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    gst.gst_rtsp_server_set_address(s->server, address);
    gst.gst_rtsp_server_set_service(s->server, service);

    GstRTSPMediaFactory *factory = gst.gst_rtsp_media_factory_new();
    gst.gst_rtsp_media_factory_set_launch(factory, launch);
    // A pipeline per client: each starts at a keyframe of its own, and one that stalls
    // holds up nobody else.
    gst.gst_rtsp_media_factory_set_shared(factory, 0);
    gst.gst_rtsp_media_factory_set_protocols(factory, GST_RTSP_LOWER_TRANS_UDP | GST_RTSP_LOWER_TRANS_TCP);
    gst.g_signal_connect_data(factory, "media-configure", (GCallback)on_media_configure, s, NULL, (GConnectFlags)0);
    if (username && password) {
        GstRTSPAuth *auth = gst.gst_rtsp_auth_new();
        GstRTSPToken *token = gst.gst_rtsp_token_new(GST_RTSP_TOKEN_MEDIA_FACTORY_ROLE, G_TYPE_STRING, "viewer", NULL);
        // Digest (the password never crosses the network) and Basic, both offered: the
        // client takes the one it prefers (FFmpeg takes Digest).
        gst.gst_rtsp_auth_set_supported_methods(auth, GST_RTSP_AUTH_BASIC | GST_RTSP_AUTH_DIGEST);
        gst.gst_rtsp_auth_add_digest(auth, username, password, token);
        gchar *basic = gst.gst_rtsp_auth_make_basic(username, password);
        gst.gst_rtsp_auth_add_basic(auth, basic, token);
        gst.g_free(basic);
        gst.gst_mini_object_unref((GstMiniObject *)token);
        gst.gst_rtsp_server_set_auth(s->server, auth);
        gst.g_object_unref(auth);
        gst.gst_rtsp_media_factory_add_role(factory, "viewer", GST_RTSP_PERM_MEDIA_FACTORY_ACCESS, G_TYPE_BOOLEAN, 1,
                                            GST_RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, G_TYPE_BOOLEAN, 1, NULL);
    }
    GstRTSPMountPoints *mounts = gst.gst_rtsp_server_get_mount_points(s->server);
    gst.gst_rtsp_mount_points_add_factory(mounts, path, factory);  // takes the factory
    gst.g_object_unref(mounts);

    s->attached = gst.gst_rtsp_server_attach(s->server, s->context);
    if (s->attached == 0) {
        snprintf(error, error_size, "cannot listen on %s:%d (in use, or not an address of this machine)", address, port);
        evc_rtsp_free(s);
        return NULL;
    }
    // Sessions of clients that went away without a TEARDOWN (UDP) end at their timeout.
    GSource *timer = gst.g_timeout_source_new_seconds(2);
    gst.g_source_set_callback(timer, cleanup_sessions, s, NULL);
    s->cleanup = gst.g_source_attach(timer, s->context);
    gst.g_source_unref(timer);
    return s;
}

void evc_rtsp_run(evc_rtsp_server *s) { gst.g_main_loop_run(s->loop); }

static gboolean quit_loop(gpointer data) {
    gst.g_main_loop_quit(((evc_rtsp_server *)data)->loop);
    return 0; // G_SOURCE_REMOVE
}

// A quit asked for before evc_rtsp_run's g_main_loop_run has begun would be lost (run marks
// the loop running as it starts), so the quit is a source on the loop's own context: it runs
// on the loop's first iteration, or at once when the loop is already running.
void evc_rtsp_quit(evc_rtsp_server *s) {
    GSource *source = gst.g_timeout_source_new_seconds(0);
    gst.g_source_set_callback(source, quit_loop, s, NULL);
    gst.g_source_attach(source, s->context);
    gst.g_source_unref(source);
}

void evc_rtsp_free(evc_rtsp_server *s) {
    if (!s) return;
    guint ids[2] = {s->attached, s->cleanup};
    for (int i = 0; i < 2; i++) {
        GSource *source = ids[i] ? gst.g_main_context_find_source_by_id(s->context, ids[i]) : NULL;
        if (source) gst.g_source_destroy(source);
    }
    gst.g_object_unref(s->server);
    gst.g_main_loop_unref(s->loop);
    gst.g_main_context_unref(s->context);
    free(s);
}

int evc_rtsp_push(evc_rtsp_media *m, const uint8_t *bytes, size_t size) {
    if (__atomic_load_n(&m->closed, __ATOMIC_ACQUIRE)) return -1;
    // Until the pipeline runs, frames would only wait in the queue (or be refused).
    if (!__atomic_load_n(&m->ready, __ATOMIC_ACQUIRE)) return 1;
    GstBuffer *buffer = gst.gst_buffer_new_memdup(bytes, size);
    return gst.gst_app_src_push_buffer((GstAppSrc *)m->appsrc, buffer) == GST_FLOW_OK ? 0 : 1;
}

int evc_rtsp_media_closed(evc_rtsp_media *m) { return __atomic_load_n(&m->closed, __ATOMIC_ACQUIRE); }

int evc_rtsp_media_take_restart(evc_rtsp_media *m) { return __atomic_exchange_n(&m->restart, 0, __ATOMIC_ACQ_REL); }

void evc_rtsp_media_release(evc_rtsp_media *m) { media_unref(m); }
