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

/// `EVIOCSMASK` on the event types (Linux 4.4): bit n of `types` lets type n through to this
/// file handle; `EV_SYN` always passes, and the kernel drops a frame left empty, so a
/// handle with no type let through is never woken. -1 with errno set on failure.
static inline int evc_evdev_set_type_mask(int fd, unsigned long long types) {
    struct input_mask mask = {
        .type = 0, .codes_size = sizeof types, .codes_ptr = (unsigned long long)(unsigned long)&types,
    };
    return ioctl(fd, EVIOCSMASK, &mask);
}

#endif
