// libcamera's bridge (Sources/CLibcameraBridge, built as its own shared object,
// libevcapture-libcamera.so) opened with dlopen on first use instead of linked: a daemon
// that never asks for libcamera loads neither it nor libcamera, libstdc++'s share of it,
// gnutls, lttng-ust and the rest (docs/libcamera.md, "Loading"). The bridge's C interface
// is declared once, in the bridge's header; loader.c defines each of its functions as a
// forwarder to the symbol resolved from the shared object.
#ifndef EVC_LIBCAMERA_LOADER_H
#define EVC_LIBCAMERA_LOADER_H

#include "../../CLibcameraBridge/include/CLibcameraBridge.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The bridge's file name, looked for next to the running executable (a build directory:
/// .build/debug, .build-static/release) and then in ../lib/evcapture/ from it
/// (/usr/bin/evcapture → /usr/lib/evcapture/, /usr/local/bin → /usr/local/lib/evcapture/).
#define EVC_LC_BRIDGE_FILE "libevcapture-libcamera.so"

/// Opens the bridge and resolves every function of its interface; 0 on success, else -1
/// with one line in `error` (the bridge or libcamera missing, a bridge of another
/// interface version). Call it before any other evc_lc_ function; later calls return the
/// first one's result.
int evc_lc_load(char *error, size_t error_size);

/// Checks that the shared object at `path` is a bridge this program can use, without
/// keeping it open or touching what evc_lc_load loaded: 0, or -1 with the reason (tests).
int evc_lc_check_bridge(const char *path, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif
#endif
