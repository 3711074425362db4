// FFmpeg's libraries opened with dlopen on first use instead of linked: linked, the dynamic
// loader maps and relocates them and the dozens of codec libraries they depend on at every
// start, several MB resident in a daemon that may never record a video. Each function
// evcapture calls is defined here with FFmpeg's own prototype (the compiler checks it
// against the headers) and forwards to the symbol resolved by evc_ffmpeg_load.
#include "CFFmpeg.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define EVC_STR2(x) #x
#define EVC_STR(x) EVC_STR2(x)

enum { AVUTIL, SWSCALE, AVCODEC, AVFORMAT, LIBRARIES };
static const char *const sonames[LIBRARIES] = {
    "libavutil.so." EVC_STR(LIBAVUTIL_VERSION_MAJOR),
    "libswscale.so." EVC_STR(LIBSWSCALE_VERSION_MAJOR),
    "libavcodec.so." EVC_STR(LIBAVCODEC_VERSION_MAJOR),
    "libavformat.so." EVC_STR(LIBAVFORMAT_VERSION_MAJOR),
};

typedef int (*evc_avio_io)(void *opaque, uint8_t *buf, int buf_size);
typedef int (*evc_avio_write)(void *opaque, EVC_AVIO_WRITE_BUFFER buf, int buf_size);
typedef int64_t (*evc_avio_seek)(void *opaque, int64_t offset, int whence);

// X(library, return type, name, parameters, arguments)
#define EVC_FUNCTIONS(X) \
    X(AVFORMAT, int, avformat_alloc_output_context2, (AVFormatContext **ctx, const AVOutputFormat *oformat, const char *format_name, const char *filename), (ctx, oformat, format_name, filename)) \
    X(AVFORMAT, AVStream *, avformat_new_stream, (AVFormatContext *s, const AVCodec *c), (s, c)) \
    X(AVFORMAT, int, avformat_write_header, (AVFormatContext *s, AVDictionary **options), (s, options)) \
    X(AVFORMAT, int, av_write_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt)) \
    X(AVFORMAT, int, av_write_trailer, (AVFormatContext *s), (s)) \
    X(AVFORMAT, AVIOContext *, avio_alloc_context, (unsigned char *buffer, int buffer_size, int write_flag, void *opaque, evc_avio_io read_packet, evc_avio_write write_packet, evc_avio_seek seek), (buffer, buffer_size, write_flag, opaque, read_packet, write_packet, seek)) \
    X(AVCODEC, const AVCodec *, avcodec_find_encoder_by_name, (const char *name), (name)) \
    X(AVCODEC, const AVCodec *, avcodec_find_decoder, (enum AVCodecID id), (id)) \
    X(AVCODEC, AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec)) \
    X(AVCODEC, int, avcodec_open2, (AVCodecContext *avctx, const AVCodec *codec, AVDictionary **options), (avctx, codec, options)) \
    X(AVCODEC, int, avcodec_send_frame, (AVCodecContext *avctx, const AVFrame *frame), (avctx, frame)) \
    X(AVCODEC, int, avcodec_receive_packet, (AVCodecContext *avctx, AVPacket *avpkt), (avctx, avpkt)) \
    X(AVCODEC, int, avcodec_send_packet, (AVCodecContext *avctx, const AVPacket *avpkt), (avctx, avpkt)) \
    X(AVCODEC, int, avcodec_receive_frame, (AVCodecContext *avctx, AVFrame *frame), (avctx, frame)) \
    X(AVCODEC, int, avcodec_parameters_from_context, (AVCodecParameters *par, const AVCodecContext *codec), (par, codec)) \
    X(AVCODEC, AVPacket *, av_packet_alloc, (void), ()) \
    X(AVCODEC, int, av_new_packet, (AVPacket *pkt, int size), (pkt, size)) \
    X(AVUTIL, int, av_strerror, (int errnum, char *errbuf, size_t errbuf_size), (errnum, errbuf, errbuf_size)) \
    X(AVUTIL, int, av_opt_set, (void *obj, const char *name, const char *val, int search_flags), (obj, name, val, search_flags)) \
    X(AVUTIL, int, av_dict_set, (AVDictionary **pm, const char *key, const char *value, int flags), (pm, key, value, flags)) \
    X(AVUTIL, AVFrame *, av_frame_alloc, (void), ()) \
    X(AVUTIL, int, av_frame_get_buffer, (AVFrame *frame, int align), (frame, align)) \
    X(AVUTIL, int, av_frame_make_writable, (AVFrame *frame), (frame)) \
    X(AVUTIL, const AVPixFmtDescriptor *, av_pix_fmt_desc_get, (enum AVPixelFormat pix_fmt), (pix_fmt)) \
    X(AVUTIL, const char *, av_get_pix_fmt_name, (enum AVPixelFormat pix_fmt), (pix_fmt)) \
    X(AVUTIL, void *, av_malloc, (size_t size), (size)) \
    X(SWSCALE, struct SwsContext *, sws_getContext, (int srcW, int srcH, enum AVPixelFormat srcFormat, int dstW, int dstH, enum AVPixelFormat dstFormat, int flags, SwsFilter *srcFilter, SwsFilter *dstFilter, const double *param), (srcW, srcH, srcFormat, dstW, dstH, dstFormat, flags, srcFilter, dstFilter, param)) \
    X(SWSCALE, int, sws_scale, (struct SwsContext *c, const uint8_t *const srcSlice[], const int srcStride[], int srcSliceY, int srcSliceH, uint8_t *const dst[], const int dstStride[]), (c, srcSlice, srcStride, srcSliceY, srcSliceH, dst, dstStride))

#define EVC_VOID_FUNCTIONS(X) \
    X(AVFORMAT, avformat_free_context, (AVFormatContext *s), (s)) \
    X(AVFORMAT, avio_context_free, (AVIOContext **s), (s)) \
    X(AVFORMAT, avio_flush, (AVIOContext *s), (s)) \
    X(AVCODEC, avcodec_free_context, (AVCodecContext **avctx), (avctx)) \
    X(AVCODEC, av_packet_free, (AVPacket **pkt), (pkt)) \
    X(AVCODEC, av_packet_unref, (AVPacket *pkt), (pkt)) \
    X(AVCODEC, av_packet_rescale_ts, (AVPacket *pkt, AVRational tb_src, AVRational tb_dst), (pkt, tb_src, tb_dst)) \
    X(AVUTIL, av_log_set_level, (int level), (level)) \
    X(AVUTIL, av_dict_free, (AVDictionary **m), (m)) \
    X(AVUTIL, av_frame_free, (AVFrame **frame), (frame)) \
    X(AVUTIL, av_free, (void *ptr), (ptr)) \
    X(AVUTIL, av_freep, (void *ptr), (ptr)) \
    X(SWSCALE, sws_freeContext, (struct SwsContext *swsContext), (swsContext))

#define EVC_FIELD(lib, ret, name, params, args) ret (*name) params;
#define EVC_VOID_FIELD(lib, name, params, args) void (*name) params;
static struct {
    EVC_FUNCTIONS(EVC_FIELD)
    EVC_VOID_FUNCTIONS(EVC_VOID_FIELD)
} real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_result = -1;
static char load_error[256] = "not loaded";

static void load(void) {
    void *handles[LIBRARIES];
    for (int i = 0; i < LIBRARIES; i++) {
        handles[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            snprintf(load_error, sizeof load_error, "cannot load %s: %s", sonames[i], dlerror());
            return;
        }
    }
#define EVC_RESOLVE(lib, name) \
    if (!(*(void **)&real.name = dlsym(handles[lib], #name))) { \
        snprintf(load_error, sizeof load_error, "%s has no %s", sonames[lib], #name); \
        return; \
    }
#define EVC_RESOLVE_FN(lib, ret, name, params, args) EVC_RESOLVE(lib, name)
#define EVC_RESOLVE_VOID(lib, name, params, args) EVC_RESOLVE(lib, name)
    EVC_FUNCTIONS(EVC_RESOLVE_FN)
    EVC_VOID_FUNCTIONS(EVC_RESOLVE_VOID)
    load_result = 0;
}

int evc_ffmpeg_load(char *error, size_t error_size) {
    pthread_once(&once, load);
    if (load_result != 0 && error && error_size) snprintf(error, error_size, "%s", load_error);
    return load_result;
}

// The forwarders: only called after evc_ffmpeg_load succeeded (Movie checks it first).
#define EVC_FORWARD(lib, ret, name, params, args) ret name params { return real.name args; }
#define EVC_FORWARD_VOID(lib, name, params, args) void name params { real.name args; }
EVC_FUNCTIONS(EVC_FORWARD)
EVC_VOID_FUNCTIONS(EVC_FORWARD_VOID)
