// The latency floor for evcapture's input path: the least a program can do to see a
// key press. It makes a uinput device, reads its evdev node with libevdev from one
// thread in epoll_wait, and for each press measures CLOCK_MONOTONIC from just before
// the uinput write of the key event to the moment the reader has the frame's
// SYN_REPORT in hand (where evcapture would call its handler).
//
// The writer and the reader talk through POSIX semaphores, exactly like the Swift
// benchmark (Benchmarks/Sources/LatencyBenchmark), so the two figures differ only by
// what lies between the evdev read and the handler.
//
// `knob` mode is the floor under the knob figure: a uinput dial (REL_DIAL) read the same
// way, and for each step's SYN_REPORT the reader issues VIDIOC_S_EXT_CTRLS (zoom_absolute
// 100 ↔ 108) on the camera itself; it measures the write → ioctl issued and → returned.
//
// Build: Tests/System/bench/build (gcc, libevdev-dev).
// Run: evdev-floor [PRESSES] [GAP_US] | evdev-floor knob /dev/videoN [STEPS] [GAP_US]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libevdev/libevdev-uinput.h>
#include <libevdev/libevdev.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/videodev2.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct libevdev *reader_dev;
static int reader_fd;
static sem_t seen;
static _Atomic int64_t seen_at;
static _Atomic int stop;
static pthread_t reader_thread;
/* knob mode: the camera, the ioctl's issue time and the next zoom value */
static int camera_fd = -1;
static _Atomic int64_t issued_at;
static int zoom_value = 100;

/* The knob floor's "handler": one VIDIOC_S_EXT_CTRLS on zoom_absolute. */
static void set_zoom(void) {
    zoom_value = zoom_value == 100 ? 108 : 100;
    struct v4l2_ext_control c = {.id = V4L2_CID_ZOOM_ABSOLUTE, .value = zoom_value};
    struct v4l2_ext_controls cs = {.which = V4L2_CTRL_WHICH_CUR_VAL, .count = 1, .controls = &c};
    issued_at = now_ns();
    if (ioctl(camera_fd, VIDIOC_S_EXT_CTRLS, &cs) != 0) {
        perror("evdev-floor: VIDIOC_S_EXT_CTRLS");
        exit(1);
    }
}

static void *reader(void *arg) {
    (void)arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, reader_fd, &ev) != 0) {
        perror("epoll");
        exit(1);
    }
    int key_in_frame = 0;
    while (!stop) {
        struct epoll_event out;
        int n = epoll_wait(ep, &out, 1, 200);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue;
        struct input_event e;
        int rc;
        while ((rc = libevdev_next_event(reader_dev, LIBEVDEV_READ_FLAG_NORMAL, &e)) >= 0) {
            if (rc == LIBEVDEV_READ_STATUS_SYNC) {
                fprintf(stderr, "evdev-floor: SYN_DROPPED (the reader fell behind)\n");
                while (libevdev_next_event(reader_dev, LIBEVDEV_READ_FLAG_SYNC, &e) == LIBEVDEV_READ_STATUS_SYNC) {}
                continue;
            }
            if ((e.type == EV_KEY && e.code == KEY_VOLUMEDOWN) || (e.type == EV_REL && e.code == REL_DIAL)) key_in_frame = 1;
            if (e.type == EV_SYN && e.code == SYN_REPORT && key_in_frame) {
                key_in_frame = 0;
                if (camera_fd >= 0) set_zoom();
                seen_at = now_ns();
                sem_post(&seen);
            }
        }
        if (rc != -EAGAIN) {
            fprintf(stderr, "evdev-floor: read: %s\n", strerror(-rc));
            exit(1);
        }
    }
    return NULL;
}

static int cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, int64_t *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += v[i];
#define P(q) (v[(int)((double)(n - 1) * (q))] / 1000.0)
    printf("%s: n=%d p50=%.1fus p90=%.1fus p99=%.1fus p99.9=%.1fus max=%.1fus mean=%.1fus\n", what, n, P(0.50), P(0.90),
           P(0.99), P(0.999), v[n - 1] / 1000.0, sum / n / 1000.0);
#undef P
}

static void write_key(struct libevdev_uinput *u, int value) {
    int type = camera_fd >= 0 ? EV_REL : EV_KEY, code = camera_fd >= 0 ? REL_DIAL : KEY_VOLUMEDOWN;
    if (libevdev_uinput_write_event(u, type, code, value) != 0 ||
        libevdev_uinput_write_event(u, EV_SYN, SYN_REPORT, 0) != 0) {
        fprintf(stderr, "evdev-floor: uinput write failed\n");
        exit(1);
    }
}

static int wait_seen(void) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    while (sem_timedwait(&seen, &deadline) != 0) {
        if (errno == EINTR) continue;
        return -1;
    }
    return 0;
}

static int knob(struct libevdev_uinput *u, int steps, int gap_us);

static void stop_reader(void) {
    stop = 1;
    pthread_join(reader_thread, NULL);
}

int main(int argc, char **argv) {
    int knob_mode = argc > 2 && strcmp(argv[1], "knob") == 0;
    if (knob_mode) {
        camera_fd = open(argv[2], O_RDWR | O_CLOEXEC);
        if (camera_fd < 0) { perror(argv[2]); return 1; }
        argv += 2;
        argc -= 2;
    }
    int presses = argc > 1 ? atoi(argv[1]) : (knob_mode ? 1000 : 10000);
    int gap_us = argc > 2 ? atoi(argv[2]) : (knob_mode ? 2000 : 200);
    if (presses <= 0) {
        fprintf(stderr, "usage: evdev-floor [PRESSES] [GAP_US] | evdev-floor knob /dev/videoN [STEPS] [GAP_US]\n");
        return 2;
    }

    struct libevdev *proto = libevdev_new();
    libevdev_set_name(proto, "evcapture latency floor");
    libevdev_set_id_bustype(proto, 0x19);
    if (knob_mode) {
        libevdev_enable_event_code(proto, EV_REL, REL_DIAL, NULL);
    } else {
        libevdev_enable_event_code(proto, EV_KEY, KEY_VOLUMEDOWN, NULL);
    }
    struct libevdev_uinput *u;
    int rc = libevdev_uinput_create_from_device(proto, LIBEVDEV_UINPUT_OPEN_MANAGED, &u);
    if (rc != 0) {
        fprintf(stderr, "evdev-floor: creating the uinput device: %s\n", strerror(-rc));
        return 1;
    }
    const char *node = libevdev_uinput_get_devnode(u);
    reader_fd = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (reader_fd < 0 || libevdev_new_from_fd(reader_fd, &reader_dev) != 0) {
        fprintf(stderr, "evdev-floor: opening %s: %s\n", node, strerror(errno));
        return 1;
    }
    libevdev_set_clock_id(reader_dev, CLOCK_MONOTONIC);
    sem_init(&seen, 0, 0);
    pthread_create(&reader_thread, NULL, reader, NULL);

    if (knob_mode) return knob(u, presses, gap_us);
    int64_t *down = calloc(presses, sizeof *down), *up = calloc(presses, sizeof *up);
    int warmup = presses / 20 + 10;
    for (int i = -warmup; i < presses; i++) {
        int64_t t0 = now_ns();
        write_key(u, 1);
        if (wait_seen() != 0) { fprintf(stderr, "evdev-floor: press %d never arrived\n", i); return 1; }
        if (i >= 0) down[i] = seen_at - t0;
        usleep(gap_us);
        t0 = now_ns();
        write_key(u, 0);
        if (wait_seen() != 0) { fprintf(stderr, "evdev-floor: release %d never arrived\n", i); return 1; }
        if (i >= 0) up[i] = seen_at - t0;
        usleep(gap_us);
    }
    stop_reader();
    printf("evdev-floor (C, libevdev + epoll, one reader thread), %d presses, %d us apart\n", presses, gap_us);
    report("floor press", down, presses);
    report("floor release", up, presses);
    libevdev_uinput_destroy(u);
    return 0;
}

/* Dial steps +1/-1; each one's SYN_REPORT makes the reader set the zoom. */
static int knob(struct libevdev_uinput *u, int steps, int gap_us) {
    int64_t *issued = calloc(steps, sizeof *issued), *returned = calloc(steps, sizeof *returned);
    int warmup = steps / 20 + 5;
    for (int i = -warmup; i < steps; i++) {
        int64_t t0 = now_ns();
        write_key(u, i % 2 == 0 ? 1 : -1);
        if (wait_seen() != 0) { fprintf(stderr, "evdev-floor: step %d never arrived\n", i); return 1; }
        if (i >= 0) {
            issued[i] = issued_at - t0;
            returned[i] = seen_at - t0;
        }
        usleep(gap_us);
    }
    stop_reader();
    printf("evdev-floor knob (C, libevdev + epoll, S_EXT_CTRLS from the reader thread), %d steps, %d us apart\n", steps, gap_us);
    report("floor knob step → S_EXT_CTRLS issued", issued, steps);
    report("floor knob step → S_EXT_CTRLS returned", returned, steps);
    libevdev_uinput_destroy(u);
    return 0;
}
