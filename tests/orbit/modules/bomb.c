/* bomb.c -- test module: allocates and touches 16 MiB blocks until an
 * allocation fails (the memory limit), then says so (DIPP_ERR_NOMEM). */
#include <stdlib.h>

#include "dipp_module.h"

#define BLOCK (16u << 20)

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    void *volatile head = NULL;
    for (;;) {
        void **block = malloc(BLOCK);
        if (!block)
            return DIPP_ERR_NOMEM; /* the blocks are the child's to drop */
        memset(block, 1, BLOCK);
        block[0] = head, head = block;
    }
}

DIPP_MODULE_NO_PARAMS("bomb", "1.0.0", run);
