/* socketer.c -- test module: tries to make a socket (killed by SIGSYS in
 * every build); returns 1 (701) if it ever got one. */
#include <sys/socket.h>
#include <unistd.h>

#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (s >= 0)
        close(s);
    return s >= 0 ? 1 : 2;
}

DIPP_MODULE_NO_PARAMS("socketer", "1.0.0", run);
