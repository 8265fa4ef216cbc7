/* m7_port.h -- DISH on the payload's Cortex-M7: what the board's pieces
 * (port/) give each other. m7_stub.c stands in for the FreeRTOS and CSP
 * side (the platform table, the uplink), m7_task.c is the DISH task,
 * m7_format.c formats without a heap, m7_libc.c puts that formatter in
 * place of newlib's, m7_main.c is the entry. Only m7_libc.c and
 * m7_main.c are board-only; the rest also builds on the host, where
 * tests/orbit/dish/test_dish_port.c runs it. */
#ifndef M7_PORT_H
#define M7_PORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "dish_platform.h"

/* The platform table over the board's services (stubs here). */
const dish_platform *m7_platform(void);

/* The next image from the ground into img (cap bytes): its length, 0
 * when none is waiting. */
size_t m7_uplink(uint8_t *img, size_t cap);

/* What the stub's uplinked image's first procedure returns on the stub
 * board (three captures, each done at once), and what the last run that
 * ended returned by its telemetry (INT32_MIN: none ended, or it faulted). */
#define M7_IMAGE_RESULT 3
int32_t m7_last_result(void);

/* The DISH task: takes an image from the uplink, installs it, starts its
 * first procedure and runs the scheduler until no run is left: 0, or -1
 * with the reason in err. */
int m7_dish_task(char *err, size_t errlen);

/* vsnprintf's contract for the conversions the runtime uses: %d %i %u
 * %x %c %s %%, flags '-' and '0', a width, lengths l, ll and z. */
int m7_vformat(char *buf, size_t cap, const char *fmt, va_list ap);

#endif
