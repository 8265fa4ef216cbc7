/* m7_libc.c -- the pieces of newlib the board replaces, so that the
 * runtime never reaches a heap. newlib-nano's formatter can grow its
 * output stream and its failed-assertion report prints through stdio;
 * both pull in malloc, free and sbrk. The runtime formats only its error
 * sentences (the verifier's reasons, a refused delete), so snprintf and
 * vsnprintf here, linked ahead of the C library, take the place of
 * newlib's and hand everything to m7_vformat, as a FreeRTOS board's
 * printf-stdarg.c does; and a failed assert() stops the task, as
 * FreeRTOS's configASSERT does. Board only: on the host the C library's
 * own serve. */
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

/* Where an assertion failed, for a debugger (on the board: also sent
 * down the debug channel before the watchdog resets the co-processor). */
static volatile struct {
    const char *file, *expr;
    int line;
} failed;

/* newlib's assert() calls this with the failed expression. */
_Noreturn void __assert_func(const char *file, int line, const char *func,
                             const char *expr);
_Noreturn void __assert_func(const char *file, int line, const char *func,
                             const char *expr) {
    (void)func;
    failed.file = file, failed.expr = expr, failed.line = line;
    for (;;) {
    }
}
