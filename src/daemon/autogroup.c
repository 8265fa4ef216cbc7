/* autogroup.c -- gives aegisd's priority to its session's share of the CPU.
 *
 * Where the kernel shares CPU time by session (autogroups: Debian's
 * default, for processes outside CPU cgroups), a nice value weighs only
 * against the other processes of the same session, and each session
 * weighs by its autogroup's own nice value. Every job's watcher starts a
 * session of its own, so aegisd's Nice=-5 (aegisd.service) did not put it
 * ahead of its jobs: each job's session weighed as much as aegisd's
 * whole, and aegisd's answers waited behind them. */
#include "autogroup.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

int autogroup_nice_as_process(int *nice_value) {
    errno = 0;
    *nice_value = getpriority(PRIO_PROCESS, 0);
    if (errno != 0) return -1;
    /* a session aegisd does not lead (a terminal's) is not its to change;
     * nor is there anything to change at the default */
    if (*nice_value == 0 || getsid(0) != getpid()) return 1;
    FILE *f = fopen("/proc/self/autogroup", "w");
    if (!f) return -1;
    int printed = fprintf(f, "%d", *nice_value);
    return fclose(f) == 0 && printed > 0 ? 0 : -1;
}
