/* spin.c -- test module: does not return in any useful time (2^64 steps
 * of a counter the compiler may not skip): the watchdog's case. */
#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    volatile unsigned long n = 0;
    while (n != ~0ul)
        n++;
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("spin", "1.0.0", run);
