/* meddler.c -- test module: reaches past its sandbox in the way its
 * parameter "how" says. Toward its fork server, a process of the same
 * user: 1 sends it SIGTERM, 2 opens a pidfd to it (to take its
 * descriptors), 3 sets its descriptor limit to 0, 4 lowers its priority.
 * Around the ban on open: 5 sets up io_uring (whose operations open files
 * unfiltered), 6 unlinks a path, 7 makes a SysV shared memory segment
 * (memory no limit counts, outliving the worker). The filter must stop
 * each: the module is killed (603), or the call fails and the module
 * returns 2 (702). It returns 1 (701) if the call got through. */
#define _GNU_SOURCE /* syscall, SYS_pidfd_open */
#include <signal.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dipp_module.h"

static const dipp_param_decl params[] = {
    {"how", DIPP_PARAM_INT, 1, 1, 7, "1 signal, 2 pidfd, 3 limit, 4 priority, "
                                     "5 io_uring, 6 unlink, 7 SysV memory"},
};

/* A SysV segment made (and removed again, should it be allowed). */
static int sysv_segment(void) {
    int id = shmget(IPC_PRIVATE, 4096, 0600);
    if (id >= 0)
        shmctl(id, IPC_RMID, NULL);
    return id >= 0 ? 0 : -1;
}

static int reach(int64_t how, pid_t server) {
    struct rlimit none = {0, 0};
    char ring[120] = {0}; /* struct io_uring_params, zeroed */
    switch (how) {
    case 1:
        return kill(server, SIGTERM);
    case 2:
        return (int)syscall(SYS_pidfd_open, server, 0) < 0 ? -1 : 0;
    case 3:
        return prlimit(server, RLIMIT_NOFILE, &none, NULL);
    case 4:
        return setpriority(PRIO_PROCESS, (id_t)server, 19);
    case 5:
        return (int)syscall(SYS_io_uring_setup, 1, ring) < 0 ? -1 : 0;
    case 6:
        return unlink("/nonexistent/dipp-meddler");
    default:
        return sysv_segment();
    }
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)out;
    return reach(p->item[0].i, getppid()) == 0 ? 1 : 2;
}

DIPP_MODULE("meddler", "1.0.0", params, run);
