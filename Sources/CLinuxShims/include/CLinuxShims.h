// The C that Swift cannot import: function-like ioctl request macros exported as
// constants, layout-dependent fields of kernel structs as tiny accessors, and a
// non-variadic ioctl. Nothing here has state.
#ifndef EVCAPTURE_CLINUXSHIMS_H
#define EVCAPTURE_CLINUXSHIMS_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <malloc.h>
#include <linux/input.h>
#include <linux/uinput.h>
#include <linux/videodev2.h>

#include "evdev_shims.h"
#include "v4l2_shims.h"
#include "process_shims.h"

/// ioctl(2) without varargs (Swift cannot call variadic C functions).
/// Returns -1 with errno set on failure; EINTR is retried by the Swift caller.
int evc_ioctl(int fd, unsigned long request, void *arg);

#endif
