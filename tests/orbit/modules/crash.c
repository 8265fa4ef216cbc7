/* crash.c -- test module: writes through a null pointer (SIGSEGV). */
#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    volatile int *nowhere = NULL;
    *nowhere = 1;
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("crash", "1.0.0", run);
