#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

// ---- FFmpeg's libraries, loaded on first use (loader.c) ----------------------------------

/// Loads libavutil, libswscale, libavcodec and libavformat (the sonames these headers are
/// from) and resolves every function evcapture calls; 0 on success, else -1 with the
/// reason in `error`. Call it before any other FFmpeg function; later calls return the
/// first one's result. The daemon pays for FFmpeg (and the codec libraries it pulls in)
/// only once a video is recorded or an encoder is looked for.
int evc_ffmpeg_load(char *error, size_t error_size);

// ---- What Swift cannot import from FFmpeg's headers (used by Sources/Movie) ------------

static inline int evc_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int evc_averror_eof(void) { return AVERROR_EOF; }
static inline int64_t evc_av_nopts_value(void) { return AV_NOPTS_VALUE; }
/// The errno an FFmpeg error code carries (0 when it is FFmpeg's own, such as EOF).
static inline int evc_averror_errno(int error) {
    return (error < 0 && error > -4096) ? -error : 0;
}

/// Where the muxer's bytes go: an open file descriptor, written whole (short writes and
/// EINTR retried). `written` counts the bytes that reached the file; `error` keeps the
/// first errno (a full disk: ENOSPC), after which nothing more is written.
typedef struct evc_fd_sink {
    int fd;
    int64_t written;
    int error;
} evc_fd_sink;

#if LIBAVFORMAT_VERSION_MAJOR >= 61
#define EVC_AVIO_WRITE_BUFFER const uint8_t *
#else
#define EVC_AVIO_WRITE_BUFFER uint8_t *
#endif

static inline int evc_fd_sink_write(void *opaque, EVC_AVIO_WRITE_BUFFER buf, int size) {
    evc_fd_sink *sink = (evc_fd_sink *)opaque;
    if (sink->error) return AVERROR(sink->error);
    int done = 0;
    while (done < size) {
        ssize_t n = write(sink->fd, buf + done, (size_t)(size - done));
        if (n < 0) {
            if (errno == EINTR) continue;
            sink->error = errno;
            return AVERROR(sink->error);
        }
        if (n == 0) {
            sink->error = ENOSPC;
            return AVERROR(ENOSPC);
        }
        done += (int)n;
        sink->written += n;
    }
    return size;
}

/// An output AVIOContext writing to `sink` (not seekable: fragmented MP4 never seeks back).
static inline AVIOContext *evc_avio_open_sink(evc_fd_sink *sink) {
    const int size = 64 * 1024;
    unsigned char *buffer = av_malloc(size);
    if (!buffer) return NULL;
    AVIOContext *io = avio_alloc_context(buffer, size, 1, sink, NULL, evc_fd_sink_write, NULL);
    if (!io) av_free(buffer);
    return io;
}

/// Frees a context made by evc_avio_open_sink (and its buffer).
static inline void evc_avio_close_sink(AVIOContext **io) {
    if (!*io) return;
    av_freep(&(*io)->buffer);
    avio_context_free(io);
}

/// The frame's duration field (renamed between FFmpeg releases).
static inline void evc_frame_set_duration(AVFrame *frame, int64_t duration) {
#if LIBAVUTIL_VERSION_MAJOR >= 58
    frame->duration = duration;
#else
    frame->pkt_duration = duration;
#endif
}
