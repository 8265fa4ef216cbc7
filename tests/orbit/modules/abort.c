/* abort.c -- test module: calls abort() (SIGABRT). */
#include <stdlib.h>

#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    abort();
}

DIPP_MODULE_NO_PARAMS("abort", "1.0.0", run);
