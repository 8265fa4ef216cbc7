/* cpu_budget.c -- runs a thread under the deadline class (cpu_budget.h).
 *
 * Why not SCHED_FIFO: a real-time thread that answers any local user's
 * connections can be kept busy by users on the other CPUs, and holds its
 * own CPU for as long as they do (an outside review measured 73% of one
 * with six clients). A deadline thread preempts as promptly, and the
 * kernel enforces its budget whatever its clients do.
 */
#include "cpu_budget.h"

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

/* sched_setattr(2)'s argument, as the kernel's first version of it lays
 * it out (48 bytes): glibc 2.36 declares neither the call nor the struct,
 * and <linux/sched/types.h> would declare sched_param a second time. */
typedef struct cpu_sched_attr {
    uint32_t size;
    uint32_t policy;
    uint64_t flags;
    int32_t nice;               /* the ordinary classes' */
    uint32_t priority;          /* the real-time classes' */
    uint64_t runtime_ns;        /* the deadline class's */
    uint64_t deadline_ns;
    uint64_t period_ns;
} cpu_sched_attr;

_Static_assert(sizeof(cpu_sched_attr) == 48, "sched_attr's first version");

int cpu_budget_take(uint64_t runtime_ns, uint64_t period_ns) {
    cpu_sched_attr attr = {.size = sizeof(attr), .policy = SCHED_DEADLINE,
                           .runtime_ns = runtime_ns, .deadline_ns = period_ns,
                           .period_ns = period_ns};
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : errno;
}
