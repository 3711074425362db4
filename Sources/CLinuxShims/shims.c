#define _GNU_SOURCE
#include "CLinuxShims.h"
#include <string.h>
#include <sys/ioctl.h>

_Static_assert(sizeof(struct input_event) == 24, "input_event layout (64-bit time_t ABI expected)");

int evc_ioctl(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}

