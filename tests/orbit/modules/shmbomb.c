/* shmbomb.c -- test module: asks for 256 MiB of shared anonymous memory,
 * which RLIMIT_DATA does not count; the filter refuses it as if the limit
 * were reached (DIPP_ERR_NOMEM), and it touches nothing. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <sys/mman.h>

#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    void *m = mmap(NULL, 256u << 20, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? DIPP_ERR_NOMEM : DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("shmbomb", "1.0.0", run);
