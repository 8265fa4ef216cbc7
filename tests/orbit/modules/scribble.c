/* scribble.c -- test module: writes into its input image, which the child
 * maps read-only (SIGSEGV): a module cannot change what the next
 * pipeline's batch will read. */
#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)p, (void)out;
    volatile uint8_t *pixel = in->images[0].data;
    pixel[0] = 0;
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("scribble", "1.0.0", run);
