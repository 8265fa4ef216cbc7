/* keeper.c -- test module: keeps a descriptor from one run to the next
 * (a copy of its stdin, standing for a batch's descriptor it could write
 * into later), and fails (701) if the copy is still open, and still the
 * same file, when it runs again. Its worker must close every descriptor
 * but its socket after each call. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dipp_module.h"

static int kept = -1;

/* Whether fd is open and the same file as stdin. */
static int same_as_stdin(int fd) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && fstat(0, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    if (kept >= 0 && same_as_stdin(kept))
        return 1;
    kept = fcntl(0, F_DUPFD, 3);
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("keeper", "1.0.0", run);
