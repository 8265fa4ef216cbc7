/* no_params_zero.c -- must not compile: DIPP_MODULE given 0 for its
 * parameters (orbit_module_macro checks the compiler's message names
 * DIPP_MODULE_NO_PARAMS). */
#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    return DIPP_OK;
}

DIPP_MODULE("nothing", "1", 0, run);
