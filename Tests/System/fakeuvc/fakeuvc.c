// fakeuvc — a USB Video Class camera made of nothing but control requests.
//
// It runs in the system-test guest, where dummy_hcd connects a virtual USB device
// controller to a virtual host controller and GadgetFS lets this program be the
// device. The kernel's own uvcvideo driver enumerates it like a webcam and creates
// /dev/videoN, so the project's V4L2 code is tested against the real driver.
//
//   USB 1209:0001 (pid.codes test PID), product string "evcapture fake camera",
//   which uvcvideo uses as the V4L2 card name.
//
//   V4L2 control            UVC control                     range            default
//   zoom_absolute           camera terminal ZOOM_ABSOLUTE   100..500 step 1  100
//   auto_exposure           camera terminal AE_MODE         0 auto, 1 manual 0 (auto)
//   exposure_time_absolute  camera terminal EXPOSURE_TIME   3..2047 step 1   250
//   brightness              processing unit BRIGHTNESS      -64..64 step 1   0
//
// Every SET_CUR the camera receives is printed on stdout, one line each, flushed at
// once:   fakeuvc: SET_CUR zoom_absolute = 300
// (auto_exposure is printed as the V4L2 menu value: 0 auto, 1 manual; the UVC wire
// value is the AE_MODE bitmap 2 auto, 1 manual.) Problems go to stderr.
//
// The camera does not stream: one YUY2 160x120 format is described so that uvcvideo
// accepts the device, but its bulk endpoint is never serviced.
//
// SIGTERM or SIGINT closes the gadget: the USB device disconnects, uvcvideo removes the
// node, and the program exits 0. Start it again to "replug" the camera.
//
// SIGUSR1 makes the camera stop answering (a webcam whose firmware hangs): every GET on
// the control interface is left without its data stage, so the host waits for uvcvideo's
// control timeout (5 s); a SET_CUR completes at the host anyway (GadgetFS takes its data
// stage in the kernel, see ignore_out_data) and is ignored. Each one is printed as
//   fakeuvc: hung: GET_CUR exposure_time_absolute at 12.345678   (CLOCK_MONOTONIC seconds)
// SIGUSR2 makes it answer again ("fakeuvc: answering at ..." once it does).
//
// usage: fakeuvc [-v] [GADGETFS_DEVICE]   (default /dev/gadget/dummy_udc)
//   -v  log every control request to stderr
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/usb/ch9.h>
#include <linux/usb/gadgetfs.h>
#include <linux/usb/video.h>

#define VENDOR_ID 0x1209
#define PRODUCT_ID 0x0001

enum { CAMERA_TERMINAL = 1, PROCESSING_UNIT = 2, OUTPUT_TERMINAL = 3 };
enum { CONTROL_INTERFACE = 0, STREAMING_INTERFACE = 1 };
enum { STR_MANUFACTURER = 1, STR_PRODUCT = 2, STR_SERIAL = 3 };

static const char *const strings[] = {
    [STR_MANUFACTURER] = "evcapture project",
    [STR_PRODUCT] = "evcapture fake camera",
    [STR_SERIAL] = "EVC0001",
};

// ---- descriptors -------------------------------------------------------------------

#define U16(v) (uint8_t)((v) & 0xff), (uint8_t)(((v) >> 8) & 0xff)
#define U32(v) U16((uint32_t)(v) & 0xffff), U16(((uint32_t)(v) >> 16) & 0xffff)

// class-specific VideoControl block: header 13 + camera terminal 17 + processing unit 11
// + output terminal 9; class-specific VideoStreaming block: input header 14 +
// uncompressed format 27 + uncompressed frame 30
#define VC_BLOCK (13 + 17 + 11 + 9)
#define VS_BLOCK (14 + 27 + 30)
#define CONFIG_TOTAL (9 + 8 + 9 + VC_BLOCK + 9 + VS_BLOCK + 7)

#define WIDTH 160
#define HEIGHT 120
#define FRAME_BYTES (WIDTH * HEIGHT * 2)
#define FRAME_INTERVAL 333333 // 100 ns units: 30 frames per second

static const uint8_t device_descriptor[USB_DT_DEVICE_SIZE] = {
    USB_DT_DEVICE_SIZE, USB_DT_DEVICE, U16(0x0200),
    USB_CLASS_MISC, 0x02, 0x01, // "uses interface association descriptors"
    64, U16(VENDOR_ID), U16(PRODUCT_ID), U16(0x0100),
    STR_MANUFACTURER, STR_PRODUCT, STR_SERIAL, 1,
};

static const uint8_t config_descriptors[CONFIG_TOTAL] = {
    // configuration: 2 interfaces, value 1, bus powered, 100 mA
    USB_DT_CONFIG_SIZE, USB_DT_CONFIG, U16(CONFIG_TOTAL), 2, 1, 0, USB_CONFIG_ATT_ONE, 50,
    // interface association: both interfaces form one video function
    8, USB_DT_INTERFACE_ASSOCIATION, CONTROL_INTERFACE, 2,
    USB_CLASS_VIDEO, UVC_SC_VIDEO_INTERFACE_COLLECTION, 0, STR_PRODUCT,
    // VideoControl interface, no status endpoint
    USB_DT_INTERFACE_SIZE, USB_DT_INTERFACE, CONTROL_INTERFACE, 0, 0,
    USB_CLASS_VIDEO, UVC_SC_VIDEOCONTROL, 0, 0,
    // VC header, UVC 1.00, one streaming interface
    13, USB_DT_CS_INTERFACE, UVC_VC_HEADER, U16(0x0100), U16(VC_BLOCK), U32(48000000),
    1, STREAMING_INTERFACE,
    // camera terminal; bmControls (2 bytes): D1 AE mode, D3 exposure time absolute,
    // D9 zoom absolute
    17, USB_DT_CS_INTERFACE, UVC_VC_INPUT_TERMINAL, CAMERA_TERMINAL, U16(UVC_ITT_CAMERA), 0, 0,
    U16(0), U16(0), U16(0), 2, (1 << 1) | (1 << 3), (1 << (9 - 8)),
    // processing unit (UVC 1.00 layout, no bmVideoStandards); bmControls: D0 brightness
    11, USB_DT_CS_INTERFACE, UVC_VC_PROCESSING_UNIT, PROCESSING_UNIT, CAMERA_TERMINAL,
    U16(0), 2, (1 << 0), 0, 0,
    // output terminal: USB streaming, fed by the processing unit
    9, USB_DT_CS_INTERFACE, UVC_VC_OUTPUT_TERMINAL, OUTPUT_TERMINAL, U16(UVC_TT_STREAMING), 0,
    PROCESSING_UNIT, 0,
    // VideoStreaming interface with one bulk IN endpoint
    USB_DT_INTERFACE_SIZE, USB_DT_INTERFACE, STREAMING_INTERFACE, 0, 1,
    USB_CLASS_VIDEO, UVC_SC_VIDEOSTREAMING, 0, 0,
    // VS input header: 1 format, endpoint 0x81, linked to the output terminal
    14, USB_DT_CS_INTERFACE, UVC_VS_INPUT_HEADER, 1, U16(VS_BLOCK), USB_DIR_IN | 1, 0,
    OUTPUT_TERMINAL, 0, 0, 0, 1, 0,
    // uncompressed format YUY2 (GUID 32595559-0000-0010-8000-00aa00389b71), 16 bpp
    27, USB_DT_CS_INTERFACE, UVC_VS_FORMAT_UNCOMPRESSED, 1, 1,
    'Y', 'U', 'Y', '2', 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71,
    16, 1, 0, 0, 0, 0,
    // one frame size with one frame interval
    30, USB_DT_CS_INTERFACE, UVC_VS_FRAME_UNCOMPRESSED, 1, 0, U16(WIDTH), U16(HEIGHT),
    U32(FRAME_BYTES * 8 * 30), U32(FRAME_BYTES * 8 * 30), U32(FRAME_BYTES),
    U32(FRAME_INTERVAL), 1, U32(FRAME_INTERVAL),
    // bulk IN endpoint 1 (described, never serviced)
    USB_DT_ENDPOINT_SIZE, USB_DT_ENDPOINT, USB_DIR_IN | 1, USB_ENDPOINT_XFER_BULK, U16(64), 0,
};

// ---- controls ----------------------------------------------------------------------

struct control {
    const char *name;  // as printed in the SET_CUR log (the V4L2 name)
    uint8_t entity, selector, size;
    int is_signed;
    int32_t min, max, res, def, cur;
    uint8_t info; // GET_INFO: capabilities (UVC_CONTROL_CAP_*)
    // for AE mode: wire value (UVC bitmap) -> printed value (V4L2 menu index)
    int32_t (*printable)(int32_t wire);
};

static int32_t ae_mode_as_menu(int32_t wire) { return wire == 1 ? 1 : wire == 2 ? 0 : 100 + wire; }

#define GET_SET (UVC_CONTROL_CAP_GET | UVC_CONTROL_CAP_SET)

static struct control controls[] = {
    // AE mode: GET_RES is the bitmap of supported modes (1 manual | 2 auto), GET_DEF 2 auto
    // Exposure time says "auto-update" (it changes by itself under auto exposure, as on
    // real webcams): uvcvideo then never caches its value, and each read is a USB GET_CUR.
    {"auto_exposure", CAMERA_TERMINAL, UVC_CT_AE_MODE_CONTROL, 1, 0, 0, 0, 0x03, 0x02, 0x02, GET_SET, ae_mode_as_menu},
    {"exposure_time_absolute", CAMERA_TERMINAL, UVC_CT_EXPOSURE_TIME_ABSOLUTE_CONTROL, 4, 0, 3, 2047, 1, 250, 250,
     GET_SET | UVC_CONTROL_CAP_AUTOUPDATE, NULL},
    {"zoom_absolute", CAMERA_TERMINAL, UVC_CT_ZOOM_ABSOLUTE_CONTROL, 2, 0, 100, 500, 1, 100, 100, GET_SET, NULL},
    {"brightness", PROCESSING_UNIT, UVC_PU_BRIGHTNESS_CONTROL, 2, 1, -64, 64, 1, 0, 0, GET_SET, NULL},
};
#define CONTROL_COUNT (sizeof controls / sizeof controls[0])

// UVC 1.00 video probe and commit state (26 bytes): what the host last set is what it
// reads back, which is all uvcvideo needs while nothing streams.
#define PROBE_SIZE 26
static uint8_t probe_state[PROBE_SIZE];
static uint8_t last_error; // VC_REQUEST_ERROR_CODE_CONTROL

static int verbose;
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t hung; // SIGUSR1 sets, SIGUSR2 clears
static int hung_reported;

static void store_le(uint8_t *out, int size, int32_t value) {
    for (int i = 0; i < size; i++) out[i] = (uint8_t)((uint32_t)value >> (8 * i));
}

static int32_t load_le(const uint8_t *in, int size, int is_signed) {
    uint32_t v = 0;
    for (int i = 0; i < size; i++) v |= (uint32_t)in[i] << (8 * i);
    if (is_signed && size < 4 && (v & (1u << (8 * size - 1)))) v |= ~0u << (8 * size);
    return (int32_t)v;
}

// ---- ep0 primitives ----------------------------------------------------------------
// GadgetFS: writing answers an IN request; reading fetches an OUT request's data. An I/O
// call in the direction the request does not have stalls it; a zero-length one in its
// own direction completes the status stage.

static void reply(int fd, const struct usb_ctrlrequest *setup, const void *data, size_t size) {
    size_t length = setup->wLength < size ? setup->wLength : size;
    if (write(fd, data, length) < 0 && verbose) fprintf(stderr, "fakeuvc: reply: %s\n", strerror(errno));
}

static void stall(int fd, const struct usb_ctrlrequest *setup) {
    char none;
    ssize_t r = (setup->bRequestType & USB_DIR_IN) ? read(fd, &none, 0) : write(fd, &none, 0);
    (void)r;
}

static void acknowledge(int fd) {
    char none;
    ssize_t r = read(fd, &none, 0);
    (void)r;
}

// ---- request handling --------------------------------------------------------------

static void string_descriptor(int fd, const struct usb_ctrlrequest *setup, unsigned index) {
    uint8_t out[2 + 2 * 63];
    size_t size;
    if (index == 0) {
        const uint8_t languages[] = {4, USB_DT_STRING, U16(0x0409)}; // English (US)
        reply(fd, setup, languages, sizeof languages);
        return;
    }
    if (index >= sizeof strings / sizeof strings[0] || !strings[index]) {
        stall(fd, setup);
        return;
    }
    size = 2;
    for (const char *c = strings[index]; *c && size + 2 <= sizeof out; c++) {
        out[size++] = (uint8_t)*c; // ASCII only: UTF-16LE is the byte and a zero
        out[size++] = 0;
    }
    out[0] = (uint8_t)size;
    out[1] = USB_DT_STRING;
    reply(fd, setup, out, size);
}

static void standard_request(int fd, const struct usb_ctrlrequest *setup) {
    uint8_t zero[2] = {0, 0};
    switch (setup->bRequest) {
    case USB_REQ_GET_DESCRIPTOR:
        if ((setup->wValue >> 8) == USB_DT_STRING) string_descriptor(fd, setup, setup->wValue & 0xff);
        else stall(fd, setup);
        return;
    case USB_REQ_SET_CONFIGURATION:
    case USB_REQ_SET_INTERFACE:
        acknowledge(fd);
        return;
    case USB_REQ_GET_INTERFACE:
        reply(fd, setup, zero, 1);
        return;
    case USB_REQ_GET_STATUS:
        reply(fd, setup, zero, 2);
        return;
    default:
        stall(fd, setup);
    }
}

static void probe_commit_request(int fd, const struct usb_ctrlrequest *setup) {
    uint8_t data[64] = {0};
    switch (setup->bRequest) {
    case UVC_SET_CUR: {
        ssize_t n = read(fd, data, setup->wLength < sizeof data ? setup->wLength : sizeof data);
        if (n > 0) memcpy(probe_state, data, n < PROBE_SIZE ? (size_t)n : PROBE_SIZE);
        else fprintf(stderr, "fakeuvc: probe/commit data lost: %s\n", n < 0 ? strerror(errno) : "empty");
        return;
    }
    case UVC_GET_INFO:
        data[0] = UVC_CONTROL_CAP_GET | UVC_CONTROL_CAP_SET;
        reply(fd, setup, data, 1);
        return;
    case UVC_GET_LEN:
        store_le(data, 2, PROBE_SIZE);
        reply(fd, setup, data, 2);
        return;
    case UVC_GET_CUR: case UVC_GET_MIN: case UVC_GET_MAX: case UVC_GET_DEF: case UVC_GET_RES:
        reply(fd, setup, probe_state, PROBE_SIZE);
        return;
    default:
        stall(fd, setup);
    }
}

static void control_request(int fd, const struct usb_ctrlrequest *setup, struct control *c) {
    uint8_t data[8] = {0};
    int32_t value;
    switch (setup->bRequest) {
    case UVC_SET_CUR: {
        ssize_t n = read(fd, data, setup->wLength < sizeof data ? setup->wLength : sizeof data);
        if (n < c->size) {
            // GadgetFS finished this request before we read it and the host already sent
            // the next one: the value never arrived. Say so, where a test will see it.
            printf("fakeuvc: SET_CUR %s lost (%s)\n", c->name, n < 0 ? strerror(errno) : "short");
            return;
        }
        c->cur = load_le(data, c->size, c->is_signed);
        printf("fakeuvc: SET_CUR %s = %d\n", c->name, c->printable ? c->printable(c->cur) : c->cur);
        last_error = 0;
        return;
    }
    case UVC_GET_INFO:
        data[0] = c->info;
        reply(fd, setup, data, 1);
        return;
    case UVC_GET_LEN:
        store_le(data, 2, c->size);
        reply(fd, setup, data, 2);
        return;
    case UVC_GET_CUR: value = c->cur; break;
    case UVC_GET_MIN: value = c->min; break;
    case UVC_GET_MAX: value = c->max; break;
    case UVC_GET_RES: value = c->res; break;
    case UVC_GET_DEF: value = c->def; break;
    default:
        last_error = 0x07; // invalid request
        stall(fd, setup);
        return;
    }
    store_le(data, c->size, value);
    reply(fd, setup, data, c->size);
}

// CLOCK_MONOTONIC seconds: the clock of the daemon's JSON `time`.
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// Hung: an IN request is left without its data stage, so the host's control transfer
// waits (uvcvideo: 5 s, then ETIMEDOUT). Any read or write on ep0 now would answer it
// (a read stalls it), so the camera only polls: until the host has sent its next SETUP
// (GadgetFS reports the one left behind as POLLHUP) or the camera is told to answer again
// (SIGUSR2; the main loop's next read then stalls the waiting request).
static void await_abandon(int fd) {
    while (hung && !stop_requested) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, 1000);
        if (r > 0 && (p.revents & POLLHUP)) return;
        if (r < 0 && errno != EINTR) return;
    }
}

// Hung: an OUT request's data stage was completed by GadgetFS in the kernel before this
// program saw the SETUP, so the host's SET_CUR has already succeeded; the camera ignores
// the value, as a hung camera would.
static void ignore_out_data(int fd, const struct usb_ctrlrequest *setup) {
    uint8_t data[64];
    if (setup->wLength) {
        ssize_t r = read(fd, data, setup->wLength < sizeof data ? setup->wLength : sizeof data);
        (void)r;
    }
}

static const char *request_name(uint8_t request) {
    switch (request) {
    case UVC_SET_CUR: return "SET_CUR";
    case UVC_GET_CUR: return "GET_CUR";
    case UVC_GET_MIN: return "GET_MIN";
    case UVC_GET_MAX: return "GET_MAX";
    case UVC_GET_RES: return "GET_RES";
    case UVC_GET_DEF: return "GET_DEF";
    case UVC_GET_INFO: return "GET_INFO";
    case UVC_GET_LEN: return "GET_LEN";
    default: return "request";
    }
}

static const char *control_name(unsigned entity, unsigned selector) {
    for (size_t i = 0; i < CONTROL_COUNT; i++)
        if (controls[i].entity == entity && controls[i].selector == selector) return controls[i].name;
    return entity == 0 && selector == UVC_VC_REQUEST_ERROR_CODE_CONTROL ? "request_error_code" : "unknown";
}

static void class_request(int fd, const struct usb_ctrlrequest *setup) {
    unsigned interface = setup->wIndex & 0xff, entity = setup->wIndex >> 8, selector = setup->wValue >> 8;
    if (verbose)
        fprintf(stderr, "fakeuvc: request 0x%02x interface %u entity %u selector %u length %u\n",
                setup->bRequest, interface, entity, selector, setup->wLength);
    if (hung && interface == CONTROL_INTERFACE) {
        printf("fakeuvc: hung: %s %s at %.6f\n", request_name(setup->bRequest), control_name(entity, selector), now());
        if (setup->bRequestType & USB_DIR_IN) await_abandon(fd);
        else ignore_out_data(fd, setup);
        return;
    }
    if (interface == STREAMING_INTERFACE && entity == 0 &&
        (selector == UVC_VS_PROBE_CONTROL || selector == UVC_VS_COMMIT_CONTROL)) {
        probe_commit_request(fd, setup);
        return;
    }
    if (interface == CONTROL_INTERFACE && entity == 0 && selector == UVC_VC_REQUEST_ERROR_CODE_CONTROL &&
        setup->bRequest == UVC_GET_CUR) {
        reply(fd, setup, &last_error, 1);
        return;
    }
    if (interface == CONTROL_INTERFACE) {
        for (size_t i = 0; i < CONTROL_COUNT; i++) {
            if (controls[i].entity == entity && controls[i].selector == selector) {
                control_request(fd, setup, &controls[i]);
                return;
            }
        }
    }
    fprintf(stderr, "fakeuvc: no such control (request 0x%02x interface %u entity %u selector %u)\n",
            setup->bRequest, interface, entity, selector);
    last_error = 0x06; // invalid control
    stall(fd, setup);
}

static void on_signal(int signo) {
    if (signo == SIGUSR1) hung = 1;
    else if (signo == SIGUSR2) hung = 0;
    else stop_requested = 1;
}

int main(int argc, char **argv) {
    const char *path = "/dev/gadget/dummy_udc";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) verbose = 1;
        else if (argv[i][0] != '-') path = argv[i];
        else {
            fprintf(stderr, "usage: fakeuvc [-v] [GADGETFS_DEVICE]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);

    // No SA_RESTART: the blocking ep0 read must return EINTR so the loop can stop.
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    // a parent may have started us with these blocked (the mask is inherited)
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGUSR1);
    sigaddset(&stop_signals, SIGUSR2);
    sigprocmask(SIG_UNBLOCK, &stop_signals, NULL);

    // GadgetFS completes an OUT request's data stage before this program reads it; if
    // the host's next request arrives first, the data is gone. Answering quickly makes
    // that rare: real-time priority, no page faults.
    struct sched_param priority = {.sched_priority = 40};
    if (sched_setscheduler(0, SCHED_FIFO, &priority) < 0)
        fprintf(stderr, "fakeuvc: no real-time priority (%s); control writes may be lost\n", strerror(errno));
    mlockall(MCL_CURRENT | MCL_FUTURE);

    // probe/commit defaults: format 1, frame 1, 30 fps, frame size, 64-byte payloads
    probe_state[2] = 1;
    probe_state[3] = 1;
    store_le(probe_state + 4, 4, FRAME_INTERVAL);
    store_le(probe_state + 18, 4, FRAME_BYTES);
    store_le(probe_state + 22, 4, 64);

    int fd = open(path, O_RDWR);
    if (fd < 0) {
        fprintf(stderr, "fakeuvc: cannot open %s: %s (is gadgetfs mounted, dummy_hcd loaded?)\n", path, strerror(errno));
        return 1;
    }
    // GadgetFS device setup: a zero tag, the (full-speed) configuration, the device descriptor
    uint8_t setup_blob[4 + sizeof config_descriptors + sizeof device_descriptor] = {0};
    memcpy(setup_blob + 4, config_descriptors, sizeof config_descriptors);
    memcpy(setup_blob + 4 + sizeof config_descriptors, device_descriptor, sizeof device_descriptor);
    if (write(fd, setup_blob, sizeof setup_blob) < 0) {
        fprintf(stderr, "fakeuvc: %s rejected the descriptors: %s\n", path, strerror(errno));
        return 1;
    }
    printf("fakeuvc: plugged in as %04x:%04x \"%s\"\n", VENDOR_ID, PRODUCT_ID, strings[STR_PRODUCT]);

    while (!stop_requested) {
        if (hung != hung_reported) {
            hung_reported = hung;
            printf("fakeuvc: %s at %.6f\n", hung ? "not answering" : "answering", now());
        }
        struct usb_gadgetfs_event events[5];
        ssize_t n = read(fd, events, sizeof events);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            if (errno == EIDRM || errno == EL2HLT) { // a request overtaken by the next one
                fprintf(stderr, "fakeuvc: control request aborted (%s)\n", strerror(errno));
                continue;
            }
            fprintf(stderr, "fakeuvc: reading ep0: %s\n", strerror(errno));
            close(fd);
            return 1;
        }
        for (size_t i = 0; i < (size_t)n / sizeof events[0]; i++) {
            const struct usb_ctrlrequest *setup = &events[i].u.setup;
            switch (events[i].type) {
            case GADGETFS_CONNECT:
                if (verbose) fprintf(stderr, "fakeuvc: connected (speed %d)\n", events[i].u.speed);
                break;
            case GADGETFS_DISCONNECT:
                if (verbose) fprintf(stderr, "fakeuvc: disconnected\n");
                break;
            case GADGETFS_SETUP:
                if ((setup->bRequestType & USB_TYPE_MASK) == USB_TYPE_STANDARD) standard_request(fd, setup);
                else if ((setup->bRequestType & USB_TYPE_MASK) == USB_TYPE_CLASS) class_request(fd, setup);
                else stall(fd, setup);
                break;
            default:
                break;
            }
        }
    }
    close(fd); // unbinds the gadget driver: the host sees a disconnect
    printf("fakeuvc: unplugged\n");
    return 0;
}
