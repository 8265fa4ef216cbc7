/* cpu_budget.h -- a thread woken at once, within a budget of CPU time
 * (cpu_budget.c). */
#ifndef AEGIS_CPU_BUDGET_H
#define AEGIS_CPU_BUDGET_H

#include <stdint.h>

/* Puts the calling thread under the kernel's deadline class
 * (SCHED_DEADLINE): each time it wakes it runs ahead of every ordinary
 * and real-time thread, but for at most runtime_ns of CPU in each
 * period_ns, past which the kernel holds it until the next period.
 * 0, or an errno: EPERM without the right (not root, a unit's
 * RestrictRealtime=, a CPU affinity narrower than the machine's), EBUSY
 * where the machine's deadline bandwidth is taken. */
int cpu_budget_take(uint64_t runtime_ns, uint64_t period_ns);

#endif
