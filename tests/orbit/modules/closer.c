/* closer.c -- test module: closes every descriptor it may hold (its
 * worker's socket among them), ignores its alarm and spins. The fork
 * server must still end it at its deadline, not wait for it. */
#include <signal.h>
#include <unistd.h>

#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    signal(SIGALRM, SIG_IGN);
    volatile unsigned long n = 0;
    while (n != ~0ul)
        n++;
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("closer", "1.0.0", run);
