/* cpu_budget.h -- a thread woken at once, within a budget of CPU time
 * (cpu_budget.c). */
#ifndef AEGIS_CPU_BUDGET_H
#define AEGIS_CPU_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cpu_budget {
    uint64_t budget_ns;         /* the thread's CPU time a window may take */
    uint64_t window_ns;
    uint64_t window_start_ns;   /* CLOCK_MONOTONIC */
    uint64_t cpu_at_start_ns;   /* the thread's CPU time then */
    bool demoted;               /* over budget: in the ordinary class until
                                   the window ends */
} cpu_budget;

/* Puts the calling thread in the real-time class (SCHED_FIFO, the lowest
 * priority): each time it wakes it runs ahead of every ordinary thread.
 * b then keeps it to budget_ns of CPU in each window_ns (cpu_budget_check).
 * 0, or an errno: EPERM without the right (not root, a unit's
 * RestrictRealtime=); the thread is then left as it was. */
int cpu_budget_take(cpu_budget *b, uint64_t budget_ns, uint64_t window_ns);

/* Called by the thread before it waits for work: past its budget, it
 * goes to the ordinary class for the rest of the window, and back to the
 * real-time class once a window has ended. */
void cpu_budget_check(cpu_budget *b);

/* How long the thread may wait before its next cpu_budget_check: -1 (as
 * long as it likes) in the real-time class, else the milliseconds until
 * its window ends, so that it is back in the real-time class for its
 * next wake-up. */
int cpu_budget_wait_ms(const cpu_budget *b);

#endif
