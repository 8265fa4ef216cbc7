/* opener.c -- test module: tries to open a file after the sandbox is on.
 * The flight filter kills it (SIGSYS); the sanitizer build's looser one
 * makes open fail with EPERM, and the module returns 2 (error 702). It
 * returns 1 (701) if the open ever succeeds. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    int fd = open("/etc/hostname", O_RDONLY);
    if (fd >= 0) {
        close(fd);
        return 1;
    }
    return errno == EPERM ? 2 : 3;
}

DIPP_MODULE_NO_PARAMS("opener", "1.0.0", run);
