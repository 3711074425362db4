// Input devices for the daemon benchmarks (Tests/System/bench/daemon.py): makes DEVICES
// uinput devices and keeps them until stdin ends, writing key presses on command.
//
//   uinput-flood DEVICES
//
// Devices: "evcapture bench keys N" (gpio-keys-like, bus 0x19: KEY_VOLUMEDOWN,
// KEY_VOLUMEUP, no autorepeat); the last one, when DEVICES > 1, is "evcapture bench dial"
// (REL_DIAL + BTN_0, a slider). Prints one line per device, "node NAME", then "ready".
// Commands on stdin, one per line:
//   press N BATCH GAP_US   N clicks (KEY_VOLUMEDOWN 1, SYN, 0, SYN) on the first device,
//                          sleeping GAP_US after every BATCH clicks; prints "done N SECONDS"
//   dial N GAP_US          N REL_DIAL steps (+1, -1 alternating) on the dial; "done N SECONDS"
//   click HOLD_US          one KEY_VOLUMEDOWN press held HOLD_US on the first device;
//                          prints "clicked T" (CLOCK_MONOTONIC seconds just before the
//                          key-down write) once released (shutter.py)
//   turn STEP              one REL_DIAL step of STEP on the dial; prints "turned T"
//                          (CLOCK_MONOTONIC seconds just before the write; recording.py)
#define _GNU_SOURCE
#include <errno.h>
#include <libevdev/libevdev-uinput.h>
#include <libevdev/libevdev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void emit(struct libevdev_uinput *u, int type, int code, int value) {
    int rc = libevdev_uinput_write_event(u, type, code, value);
    if (rc != 0) {
        fprintf(stderr, "uinput-flood: write: %s\n", strerror(-rc));
        exit(1);
    }
}

static struct libevdev_uinput *make(const char *name, int dial) {
    struct libevdev *d = libevdev_new();
    libevdev_set_name(d, name);
    if (dial) {
        // a USB dial, like the PowerMate's shape (not its ids: no udev role, defaults only)
        libevdev_set_id_bustype(d, 0x03);
        libevdev_set_id_vendor(d, 0x1209);
        libevdev_set_id_product(d, 0x0d1a);
        libevdev_enable_event_code(d, EV_REL, REL_DIAL, NULL);
        libevdev_enable_event_code(d, EV_KEY, BTN_0, NULL);
    } else {
        libevdev_set_id_bustype(d, 0x19);
        libevdev_set_id_vendor(d, 0x0001);
        libevdev_set_id_product(d, 0x0001);
        libevdev_enable_event_code(d, EV_KEY, KEY_VOLUMEDOWN, NULL);
        libevdev_enable_event_code(d, EV_KEY, KEY_VOLUMEUP, NULL);
    }
    struct libevdev_uinput *u;
    int rc = libevdev_uinput_create_from_device(d, LIBEVDEV_UINPUT_OPEN_MANAGED, &u);
    libevdev_free(d);
    if (rc != 0) {
        fprintf(stderr, "uinput-flood: creating %s: %s\n", name, strerror(-rc));
        exit(1);
    }
    printf("node %s %s\n", libevdev_uinput_get_devnode(u), name);
    return u;
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 0;
    if (count < 1 || count > 64) {
        fprintf(stderr, "usage: uinput-flood DEVICES (1...64)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct libevdev_uinput *devs[64];
    struct libevdev_uinput *dial = NULL;
    for (int i = 0; i < count; i++) {
        char name[64];
        if (count > 1 && i == count - 1) {
            snprintf(name, sizeof name, "evcapture bench dial");
            devs[i] = dial = make(name, 1);
        } else {
            snprintf(name, sizeof name, "evcapture bench keys %d", i);
            devs[i] = make(name, 0);
        }
    }
    printf("ready\n");

    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        long n, batch, gap;
        double t0 = now_s();
        if (sscanf(line, "press %ld %ld %ld", &n, &batch, &gap) == 3) {
            for (long i = 0; i < n; i++) {
                emit(devs[0], EV_KEY, KEY_VOLUMEDOWN, 1);
                emit(devs[0], EV_SYN, SYN_REPORT, 0);
                emit(devs[0], EV_KEY, KEY_VOLUMEDOWN, 0);
                emit(devs[0], EV_SYN, SYN_REPORT, 0);
                if (batch > 0 && (i + 1) % batch == 0 && gap > 0) usleep(gap);
            }
            printf("done %ld %.3f\n", n, now_s() - t0);
        } else if (sscanf(line, "click %ld", &gap) == 1) {
            double down = now_s();
            emit(devs[0], EV_KEY, KEY_VOLUMEDOWN, 1);
            emit(devs[0], EV_SYN, SYN_REPORT, 0);
            if (gap > 0) usleep(gap);
            emit(devs[0], EV_KEY, KEY_VOLUMEDOWN, 0);
            emit(devs[0], EV_SYN, SYN_REPORT, 0);
            printf("clicked %.6f\n", down);
        } else if (sscanf(line, "turn %ld", &n) == 1 && dial) {
            double t = now_s();
            emit(dial, EV_REL, REL_DIAL, (int)n);
            emit(dial, EV_SYN, SYN_REPORT, 0);
            printf("turned %.6f\n", t);
        } else if (sscanf(line, "dial %ld %ld", &n, &gap) == 2 && dial) {
            for (long i = 0; i < n; i++) {
                emit(dial, EV_REL, REL_DIAL, i % 2 ? -1 : 1);
                emit(dial, EV_SYN, SYN_REPORT, 0);
                if (gap > 0) usleep(gap);
            }
            printf("done %ld %.3f\n", n, now_s() - t0);
        } else {
            fprintf(stderr, "uinput-flood: unknown command: %s", line);
            printf("error\n");
        }
    }
    for (int i = 0; i < count; i++) libevdev_uinput_destroy(devs[i]);
    return 0;
}
