/* no_symbol.c -- test module: exports a run function but no dipp_module
 * (a module written for another pipeline). */
#include "dipp_module.h"

DIPP_MODULE_EXPORT int run(const dipp_batch *in, const dipp_params *p,
                           dipp_batch *out);

int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    return DIPP_OK;
}
