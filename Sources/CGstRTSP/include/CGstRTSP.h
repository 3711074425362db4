// evcapture's RTSP server: Debian's gst-rtsp-server (GStreamer), loaded with dlopen on
// first use (rtsp.c says how). The daemon that never serves RTSP maps none of GStreamer.
#ifndef EVC_GST_RTSP_H
#define EVC_GST_RTSP_H

#include <stddef.h>
#include <stdint.h>

/// Loads libgstreamer, libgstapp and libgstrtspserver and initialises GStreamer; 0, or -1
/// with the reason in `error`. Later calls return the first one's result.
int evc_rtsp_load(char *error, size_t error_size);

typedef struct evc_rtsp_server evc_rtsp_server;
/// One client's stream: the appsrc its pipeline reads access units from.
typedef struct evc_rtsp_media evc_rtsp_media;

/// A client's media was made (`media`: push its frames with evc_rtsp_push until
/// `evc_rtsp_media_closed` says it is gone, then release it); runs on the server's thread.
typedef void (*evc_rtsp_media_callback)(void *context, evc_rtsp_media *media);

/// Creates the server on `address`:`port` serving `path` (`/live`): H.264 access units
/// (Annex B, from evc_rtsp_push) as RTP over UDP or TCP (interleaved), one pipeline per
/// client. With `username` and `password` (else NULL), clients must give them (Basic).
/// Binds the port at once; NULL with the reason in `error`. Run it with evc_rtsp_run.
evc_rtsp_server *evc_rtsp_create(const char *address, int port, const char *path, const char *username,
                                 const char *password, evc_rtsp_media_callback on_media, void *context,
                                 char *error, size_t error_size);

/// Runs the server's main loop on the calling thread until evc_rtsp_quit.
void evc_rtsp_run(evc_rtsp_server *server);
/// Ends evc_rtsp_run (from any thread).
void evc_rtsp_quit(evc_rtsp_server *server);
/// Frees the server (after evc_rtsp_run returned).
void evc_rtsp_free(evc_rtsp_server *server);

/// Hands one access unit to a client's pipeline (copied); 0, or -1 once the client is gone.
int evc_rtsp_push(evc_rtsp_media *media, const uint8_t *bytes, size_t size);
/// 1 once after the client's pipeline started running or the client sent PLAY: its next
/// frame should be a keyframe (the feeder starts again from one); else 0.
int evc_rtsp_media_take_restart(evc_rtsp_media *media);
/// Whether the client's pipeline is gone (it tore down, or its connection closed).
int evc_rtsp_media_closed(evc_rtsp_media *media);
/// Frees the handle given to the media callback (once its feeder is done with it).
void evc_rtsp_media_release(evc_rtsp_media *media);

// WebRTC for the live view's WHEP endpoint (webrtc.c): a webrtcbin per viewer.

/// Loads GStreamer with webrtcbin's libraries; 0, or -1 with the reason in `error`. Later
/// calls return the first one's result.
int evc_webrtc_load(char *error, size_t error_size);

/// One viewer's peer connection: the appsrc its H.264 goes into.
typedef struct evc_webrtc_session evc_webrtc_session;

/// Answers a viewer's SDP `offer` (a video it receives): a pipeline sending H.264 as RTP
/// with `payload_type`, the offer's (packetization mode 1), host
/// candidates on `local_address` (NULL: every address of the machine), STUN and TURN
/// servers when given (else NULL). Waits for ICE gathering (at most `timeout_ms`) and puts
/// the answer with its candidates in `*answer` (free() it). NULL with the reason in `error`.
evc_webrtc_session *evc_webrtc_answer(const char *offer, int payload_type, const char *local_address, const char *stun_server, const char *turn_server,
                                      int timeout_ms, char **answer, char *error, size_t error_size);
/// Hands one access unit to the viewer (copied), stamped with its camera frame's capture
/// time (CLOCK_MONOTONIC µs): 0; 1 when not taken (not connected yet); -1 once the connection
/// failed or closed. One thread pushes.
int evc_webrtc_push(evc_webrtc_session *session, const uint8_t *bytes, size_t size, int64_t capture_us);
/// 1 once after the connection came up or the viewer asked for a keyframe (PLI/FIR); else 0.
int evc_webrtc_take_keyframe_request(evc_webrtc_session *session);
/// Whether ICE and DTLS are up (the viewer can decode what is pushed).
int evc_webrtc_connected(evc_webrtc_session *session);
/// Why a session ended (``evc_webrtc_closed``).
enum evc_webrtc_end { EVC_WEBRTC_FAILED = 1, EVC_WEBRTC_CLOSED = 2, EVC_WEBRTC_BYE = 3, EVC_WEBRTC_TIMED_OUT = 4 };
/// 0 while the connection lives; once it failed or closed, why (an evc_webrtc_end, the first seen).
int evc_webrtc_closed(evc_webrtc_session *session);
/// The reason in words, for the log.
const char *evc_webrtc_end_reason(int reason);
/// Stops the pipeline and frees the session.
void evc_webrtc_free(evc_webrtc_session *session);

#endif
