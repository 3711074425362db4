// The GPIO side of the booth benchmark (booth.py), run in the test VM:
//
//   gpio-bench cp2112 OUT IN   emulates a CP2112 USB-HID GPIO expander on /dev/uhid (the
//                              kernel's hid-cp2112 binds to it and makes a gpiochip), with a
//                              jumper from line OUT to line IN: IN reads what OUT was last
//                              set to. Prints "ready", then for every GPIO set the driver
//                              sends, "set LINE VALUE NS": CLOCK_MONOTONIC when the request
//                              reached the emulated chip (the pin's change on hardware, less
//                              the USB transfer). Ends on SIGTERM.
//   gpio-bench monitor CHIP IN both-edge line events on IN through libgpiod: "ready", then
//                              "edge rising|falling NS" with the kernel's event timestamp
//                              (CLOCK_MONOTONIC). hid-cp2112 has no interrupt: it polls the
//                              input levels every 10 jiffies (40 ms at HZ=250) and the
//                              timestamp is taken when a poll sees the change.
//   gpio-bench pulse CHIP OUT  the floor: OUT requested as an output through libgpiod; for
//                              every stdin line "T_US LENGTH_US" sleeps until T (absolute,
//                              CLOCK_MONOTONIC), sets OUT, sleeps until T + LENGTH, clears
//                              it, and prints "pulse T_US SET_NS" (when the set returned).
#include <errno.h>
#include <gpiod.h>
#include <linux/uhid.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until_us(int64_t us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static void write_event(int fd, const struct uhid_event *ev) {
    if (write(fd, ev, sizeof *ev) != (ssize_t)sizeof *ev) perror("gpio-bench: write /dev/uhid");
}

static volatile sig_atomic_t stopping;
static void on_term(int sig) {
    (void)sig;
    stopping = 1;
}

// Vendor-defined feature reports with the CP2112's ids, in the sizes its driver asks for.
static const uint8_t descriptor[] = {
    0x06, 0x00, 0xFF, 0x09, 0x01, 0xA1, 0x01, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08,
    0x85, 0x02, 0x09, 0x02, 0x95, 4,  0xB1, 0x02,  // GPIO configuration
    0x85, 0x03, 0x09, 0x03, 0x95, 1,  0xB1, 0x02,  // GPIO get
    0x85, 0x04, 0x09, 0x04, 0x95, 2,  0xB1, 0x02,  // GPIO set
    0x85, 0x05, 0x09, 0x05, 0x95, 2,  0xB1, 0x02,  // part number, version
    0x85, 0x06, 0x09, 0x06, 0x95, 13, 0xB1, 0x02,  // SMBus configuration
    0x85, 0x20, 0x09, 0x20, 0x95, 1,  0xB1, 0x02,  // lock byte
    0xC0,
};

static int cp2112(int out, int in) {
    int fd = open("/dev/uhid", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror("gpio-bench: /dev/uhid");
        return 1;
    }
    struct uhid_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = UHID_CREATE2;
    strcpy((char *)ev.u.create2.name, "CP2112 HID USB-to-SMBus Bridge");
    ev.u.create2.rd_size = sizeof descriptor;
    ev.u.create2.bus = 0x03;  // BUS_USB
    ev.u.create2.vendor = 0x10c4;
    ev.u.create2.product = 0xea90;
    memcpy(ev.u.create2.rd_data, descriptor, sizeof descriptor);
    write_event(fd, &ev);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    printf("ready\n");
    fflush(stdout);
    uint8_t direction = 0, push_pull = 0, latch = 0;
    while (!stopping) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0) continue;
        if (read(fd, &ev, sizeof ev) < 4) continue;
        int64_t t = now_ns();
        struct uhid_event reply;
        memset(&reply, 0, sizeof reply);
        if (ev.type == UHID_GET_REPORT) {
            uint8_t *d = reply.u.get_report_reply.data;
            uint16_t n = 1;
            d[0] = ev.u.get_report.rnum;
            switch (ev.u.get_report.rnum) {
            case 0x05: d[1] = 0x0C; d[2] = 0x02; n = 3; break;
            case 0x06: {
                static const uint8_t smbus[] = {0x06, 0x00, 0x01, 0x86, 0xA0, 0x02, 0x00, 0x00, 0x64, 0x00, 0x64, 0x01, 0x00, 0x0F};
                memcpy(d, smbus, sizeof smbus);
                n = sizeof smbus;
                break;
            }
            case 0x02: d[1] = direction; d[2] = push_pull; d[3] = 0; d[4] = 0; n = 5; break;
            case 0x03: d[1] = latch; n = 2; break;
            case 0x20: d[1] = 0xFF; n = 2; break;
            }
            reply.type = UHID_GET_REPORT_REPLY;
            reply.u.get_report_reply.id = ev.u.get_report.id;
            reply.u.get_report_reply.size = n;
            write_event(fd, &reply);
        } else if (ev.type == UHID_SET_REPORT) {
            const uint8_t *d = ev.u.set_report.data;
            if (d[0] == 0x02 && ev.u.set_report.size >= 3) {
                direction = d[1];
                push_pull = d[2];
            } else if (d[0] == 0x04 && ev.u.set_report.size >= 3) {
                for (int line = 0; line < 8; line++) {
                    if (!(d[2] & (1 << line))) continue;
                    int on = (d[1] >> line) & 1;
                    latch = (uint8_t)((latch & ~(1 << line)) | (on << line));
                    if (line == out) latch = (uint8_t)((latch & ~(1 << in)) | (on << in));  // the jumper
                    printf("set %d %d %lld\n", line, on, (long long)t);
                }
                fflush(stdout);
            }
            reply.type = UHID_SET_REPORT_REPLY;
            reply.u.set_report_reply.id = ev.u.set_report.id;
            write_event(fd, &reply);
        }
    }
    memset(&ev, 0, sizeof ev);
    ev.type = UHID_DESTROY;
    write_event(fd, &ev);
    close(fd);
    return 0;
}

static struct gpiod_line *line_of(const char *chip_path, int offset, struct gpiod_chip **chip) {
    *chip = gpiod_chip_open(chip_path);
    if (!*chip) {
        perror("gpio-bench: gpiod_chip_open");
        return NULL;
    }
    struct gpiod_line *line = gpiod_chip_get_line(*chip, (unsigned)offset);
    if (!line) perror("gpio-bench: gpiod_chip_get_line");
    return line;
}

static int monitor(const char *chip_path, int offset) {
    struct gpiod_chip *chip;
    struct gpiod_line *line = line_of(chip_path, offset, &chip);
    if (!line || gpiod_line_request_both_edges_events(line, "evc-bench-monitor") < 0) {
        perror("gpio-bench: requesting edge events");
        return 1;
    }
    signal(SIGTERM, on_term);
    printf("ready\n");
    fflush(stdout);
    while (!stopping) {
        struct timespec timeout = {.tv_sec = 0, .tv_nsec = 200000000};
        int r = gpiod_line_event_wait(line, &timeout);
        if (r < 0 && errno != EINTR) break;
        if (r <= 0) continue;
        struct gpiod_line_event e;
        if (gpiod_line_event_read(line, &e) < 0) break;
        printf("edge %s %lld\n", e.event_type == GPIOD_LINE_EVENT_RISING_EDGE ? "rising" : "falling",
               (long long)e.ts.tv_sec * 1000000000 + e.ts.tv_nsec);
        fflush(stdout);
    }
    gpiod_line_release(line);
    gpiod_chip_close(chip);
    return 0;
}

static int pulse(const char *chip_path, int offset) {
    struct gpiod_chip *chip;
    struct gpiod_line *line = line_of(chip_path, offset, &chip);
    if (!line || gpiod_line_request_output(line, "evc-bench-floor", 0) < 0) {
        perror("gpio-bench: requesting the output");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    long long at, length;
    while (scanf("%lld %lld", &at, &length) == 2) {
        sleep_until_us(at);
        gpiod_line_set_value(line, 1);
        int64_t set = now_ns();
        sleep_until_us(at + length);
        gpiod_line_set_value(line, 0);
        printf("pulse %lld %lld\n", at, (long long)set);
        fflush(stdout);
    }
    gpiod_line_release(line);
    gpiod_chip_close(chip);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "cp2112") == 0) return cp2112(atoi(argv[2]), atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "monitor") == 0) return monitor(argv[2], atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "pulse") == 0) return pulse(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: gpio-bench cp2112 OUT IN | monitor CHIP IN | pulse CHIP OUT\n");
    return 2;
}
