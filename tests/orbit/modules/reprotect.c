/* reprotect.c -- test module: asks for its read-only input to be made
 * writable (mprotect) and writes into it when that works. Its input comes
 * as a read-only descriptor, so it cannot: it says so (its own error 1),
 * and the frame the next module reads is unchanged. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)p, (void)out;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uint8_t *pixel = in->images[0].data;
    void *start = (void *)((uintptr_t)pixel / page * page);
    if (mprotect(start, page, PROT_READ | PROT_WRITE) != 0)
        return 1;
    pixel[0] ^= 0xff;
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("reprotect", "1.0.0", run);
