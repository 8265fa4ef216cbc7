/* autogroup.c -- what a session weighs against the others.
 *
 * Where the kernel shares CPU time by session (autogroups: Debian's
 * default, for processes outside CPU cgroups), a nice value weighs only
 * against the other processes of the same session, and each session
 * weighs by its autogroup's own nice value. Every job's watcher, and
 * every job, starts a session of its own, so:
 * - aegisd's Nice=-5 (aegisd.service) did not put it ahead of its jobs:
 *   each job's session weighed as much as aegisd's whole, and aegisd's
 *   answers waited behind them; aegisd gives its session its nice value;
 * - N running jobs weighed as N login sessions, and a user's terminal on
 *   the server (root's `aegis gpus`) got a share in N + 1 while the jobs
 *   kept every CPU busy; each job's session and its watcher's weigh as
 *   job_session_nice (autogroup.h) instead. The jobs still have every CPU
 *   nobody else asks for.
 */
#include "autogroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

int autogroup_set_nice(pid_t pid, int nice_value) {
    if (nice_value == 0) return 0;
    /* only a session pid leads: never one it shares with aegisd */
    pid_t leader = pid ? pid : getpid();
    pid_t session = getsid(leader);
    if (session < 0) return -1; /* ESRCH: gone */
    if (session != leader) {
        errno = EPERM;
        return -1;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/autogroup", (int)leader);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[16];
    int len = snprintf(text, sizeof(text), "%d", nice_value);
    ssize_t written = write(fd, text, (size_t)len);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == len ? 0 : -1;
}

int autogroup_nice_as_process(int *nice_value) {
    errno = 0;
    *nice_value = getpriority(PRIO_PROCESS, 0);
    if (errno != 0) return -1;
    /* a session aegisd does not lead (a terminal's) is not its to change;
     * nor is there anything to change at the default */
    if (*nice_value == 0 || getsid(0) != getpid()) return 1;
    return autogroup_set_nice(0, *nice_value);
}
