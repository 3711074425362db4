// Interposes glibc's allocator entry points to count allocations. The executable's
// definitions win over libc's for the whole process (ELF symbol interposition); each one
// forwards to glibc's internal implementation.
#include "MallocCounter.h"
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic uint64_t count;

uint64_t evc_malloc_count(void) { return count; }

void *malloc(size_t n) { count++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { count++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count++; return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) { count++; return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { count++; return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    count++;
    void *p = __libc_memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
