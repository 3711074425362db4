#pragma once
#include <stdint.h>

/// Heap allocations (malloc, calloc, realloc, memalign family) since the process started.
uint64_t evc_malloc_count(void);
