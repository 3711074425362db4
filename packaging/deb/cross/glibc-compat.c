// Linked only into the arm64 release build (packaging/deb/cross/arm64-sdk, docs/raspberry-pi.md#building-the-packages-on-a-pc):
// the static Swift runtime comes from Debian sid's swiftlang, built against glibc 2.41, whose
// headers send strtol and friends to the C23 entry points (__isoc23_*) and use strlcpy, both
// new in glibc 2.38. Debian 12 has glibc 2.36: these forward to the functions it has, so the
// binary needs at most GLIBC_2.35 and runs on Debian 12 and 13 alike. The C23 versions differ
// only in also reading "0b" binary prefixes, which nothing in evcapture passes.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

long __isoc23_strtol(const char *s, char **end, int base) { return strtol(s, end, base); }
long long __isoc23_strtoll(const char *s, char **end, int base) { return strtoll(s, end, base); }
unsigned long __isoc23_strtoul(const char *s, char **end, int base) { return strtoul(s, end, base); }
unsigned long long __isoc23_strtoull(const char *s, char **end, int base) { return strtoull(s, end, base); }
long __isoc23_wcstol(const wchar_t *s, wchar_t **end, int base) { return wcstol(s, end, base); }
long long __isoc23_wcstoll(const wchar_t *s, wchar_t **end, int base) { return wcstoll(s, end, base); }
unsigned long __isoc23_wcstoul(const wchar_t *s, wchar_t **end, int base) { return wcstoul(s, end, base); }
unsigned long long __isoc23_wcstoull(const wchar_t *s, wchar_t **end, int base) { return wcstoull(s, end, base); }

int __isoc23_sscanf(const char *s, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vsscanf(s, format, args);
    va_end(args);
    return n;
}

int __isoc23_vsscanf(const char *s, const char *format, va_list args) { return vsscanf(s, format, args); }

size_t strlcpy(char *dst, const char *src, size_t size) {
    size_t length = strlen(src);
    if (size > 0) {
        size_t n = length < size - 1 ? length : size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return length;
}

size_t strlcat(char *dst, const char *src, size_t size) {
    size_t have = strnlen(dst, size);
    if (have == size) return size + strlen(src);
    return have + strlcpy(dst + have, src, size - have);
}
