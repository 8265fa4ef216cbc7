/* fail.c -- test module: returns an error of its own, 42 (error 742). */
#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    return 42;
}

DIPP_MODULE_NO_PARAMS("fail", "1.0.0", run);
