// What rtsp.c and webrtc.c share: GLib and GStreamer's types as the few declarations they
// use (each checked against the real headers by Tests/RTSPTests: EVC_GST_WITH_HEADERS), and
// the loader that opens a set of libraries with dlopen on first use and resolves their
// functions into a table (as Sources/CFFmpeg/loader.c does for FFmpeg).
#ifndef EVC_GST_LOADER_H
#define EVC_GST_LOADER_H

#include <stddef.h>
#include <stdint.h>

#ifndef EVC_GST_WITH_HEADERS
typedef int gboolean;
typedef char gchar;
typedef int gint;
typedef unsigned int guint;
typedef unsigned long gulong;
typedef size_t gsize;
typedef void *gpointer;
typedef const void *gconstpointer;
typedef uint32_t GQuark;
typedef struct _GError {
    GQuark domain;
    gint code;
    gchar *message;
} GError;
typedef struct _GClosure GClosure;
typedef void (*GCallback)(void);
typedef void (*GClosureNotify)(gpointer data, GClosure *closure);
typedef enum { G_CONNECT_AFTER = 1 << 0 } GConnectFlags;
typedef size_t GType;
typedef struct _GstElement GstElement;
typedef struct _GstBin GstBin;
typedef struct _GstBuffer GstBuffer;
typedef struct _GstMiniObject GstMiniObject;
typedef struct _GstAppSrc GstAppSrc;
typedef enum { GST_FLOW_OK = 0 } GstFlowReturn;
#define GST_STATE_NULL 1
#define GST_STATE_PLAYING 4
#endif

/// A function `name` of library number `library`, stored into `*slot`.
typedef struct {
    int library;
    const char *name;
    void **slot;
} evc_gst_symbol;

/// Opens `count` libraries (RTLD_LOCAL) and resolves every symbol; then initialises
/// GStreamer (once per process, whoever comes first). 0, or -1 with the reason in `error`
/// (the library that is missing and `hint`, the packages that have it).
int evc_gst_open(const char *const *sonames, int count, const evc_gst_symbol *symbols, int symbol_count, const char *hint,
                 char *error, size_t error_size);

#endif
