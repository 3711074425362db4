#ifndef EVCAPTURE_EVDEV_SHIMS_H
#define EVCAPTURE_EVDEV_SHIMS_H
#include <linux/input.h>
#include <sys/ioctl.h>

/// `input_event` time fields: `time.tv_sec` on 64-bit, `__sec` on 32-bit time_t ABIs.
static inline long evc_input_event_sec(const struct input_event *e) { return (long)e->input_event_sec; }
static inline long evc_input_event_usec(const struct input_event *e) { return (long)e->input_event_usec; }
static inline void evc_input_event_set_time(struct input_event *e, long sec, long usec) {
    e->input_event_sec = sec;
    e->input_event_usec = usec;
}

static const unsigned long EVC_EVIOCGRAB = EVIOCGRAB;
static const unsigned long EVC_EVIOCSREP = EVIOCSREP;
static const unsigned long EVC_EVIOCSCLOCKID = EVIOCSCLOCKID;
static const unsigned long EVC_UI_SET_PHYS = UI_SET_PHYS;

/// `EVIOCSMASK` (Linux 4.4): which events of `type` reach this file handle, as a bitmap of
/// `size` bytes (bit n: code n; `type` 0: the event types themselves). `EV_SYN` always
/// passes, and the kernel drops a frame left empty, so a handle that lets nothing through
/// is never woken. -1 with errno set on failure.
static inline int evc_evdev_set_mask(int fd, unsigned int type, const void *bits, unsigned int size) {
    struct input_mask mask = { .type = type, .codes_size = size, .codes_ptr = (unsigned long long)(unsigned long)bits };
    return ioctl(fd, EVIOCSMASK, &mask);
}

#endif
