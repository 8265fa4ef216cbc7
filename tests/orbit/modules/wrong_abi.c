/* wrong_abi.c -- test module: claims an ABI version the runner is not. */
#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    return DIPP_OK;
}

DIPP_MODULE_EXPORT const dipp_module_info dipp_module = {
    DIPP_ABI_VERSION + 998u, "wrong_abi", "1.0.0", NULL, 0u, run};
