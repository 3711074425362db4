#define _GNU_SOURCE
#include "CLinuxShims.h"
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>

_Static_assert(sizeof(struct input_event) == 24, "input_event layout (64-bit time_t ABI expected)");

int evc_ioctl(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}

struct evc_release { long bytes; int error; long page; };

static int evc_release_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct evc_release *r = data;
    // The vDSO is the kernel's own mapping, not a file.
    if (info->dlpi_name && strstr(info->dlpi_name, "vdso")) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W)) continue;
        // Whole pages inside the segment only: a page shared with a writable one stays.
        uintptr_t start = (info->dlpi_addr + ph->p_vaddr + r->page - 1) & ~(uintptr_t)(r->page - 1);
        uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(uintptr_t)(r->page - 1);
        if (end <= start) continue;
        if (madvise((void *)start, end - start, MADV_DONTNEED) == 0) r->bytes += (long)(end - start);
        else if (!r->error) r->error = errno;
    }
    return 0;
}

long evc_release_readonly_segments(void) {
    struct evc_release r = { 0, 0, sysconf(_SC_PAGESIZE) };
    dl_iterate_phdr(evc_release_object, &r);
    return r.error ? -r.error : r.bytes;
}
