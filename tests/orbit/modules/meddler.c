/* meddler.c -- test module: reaches for its fork server, a process of the
 * same user, in the way its parameter "how" says: 1 sends it SIGTERM, 2
 * opens a pidfd to it (to take its descriptors), 3 sets its descriptor
 * limit to 0, 4 lowers its priority. The filter must stop each: the module
 * is killed (603), or in the sanitizer build the call fails and the module
 * returns 2 (702). It returns 1 (701) if the call got through. */
#define _GNU_SOURCE /* syscall, SYS_pidfd_open */
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dipp_module.h"

static const dipp_param_decl params[] = {
    {"how", DIPP_PARAM_INT, 1, 1, 4, "1 signal, 2 pidfd, 3 limit, 4 priority"},
};

static int reach(int64_t how, pid_t server) {
    struct rlimit none = {0, 0};
    switch (how) {
    case 1:
        return kill(server, SIGTERM);
    case 2:
        return (int)syscall(SYS_pidfd_open, server, 0) < 0 ? -1 : 0;
    case 3:
        return prlimit(server, RLIMIT_NOFILE, &none, NULL);
    default:
        return setpriority(PRIO_PROCESS, (id_t)server, 19);
    }
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)out;
    return reach(p->item[0].i, getppid()) == 0 ? 1 : 2;
}

DIPP_MODULE("meddler", "1.0.0", params, run);
