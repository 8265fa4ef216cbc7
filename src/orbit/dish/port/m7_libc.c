/* m7_libc.c -- snprintf and vsnprintf for the board, without a heap.
 * newlib-nano's formatter can grow its output stream, so linking it
 * pulls in malloc, free and sbrk, which the runtime must never have.
 * The runtime formats only its error sentences (the verifier's reasons,
 * a refused delete), so these two, linked ahead of the C library, take
 * the place of newlib's and hand everything to m7_vformat. A FreeRTOS
 * board does the same (its printf-stdarg.c). Board only: on the host
 * the C library's own serve. */
#include <stdarg.h>
#include <stdio.h>

#include "m7_port.h"

int vsnprintf(char *restrict buf, size_t cap, const char *restrict fmt, va_list ap) {
    return m7_vformat(buf, cap, fmt, ap);
}

int snprintf(char *restrict buf, size_t cap, const char *restrict fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = m7_vformat(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}
