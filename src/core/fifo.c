/* fifo.c -- the scheduling pass: AEGIS's walk down the queue, or the
 * policy's backfill (backfill.c). Both sit above placement (place.c) and
 * carry a placement out through core_launch_job() (core.c).
 */
#include "core_priv.h"

/* The queue in order, waiting behind its head: AEGIS. */
static int core_schedule_fifo(core_state *core, double now, core_launch *out,
                              int max) {
    int n = 0;
    core_job *job;
    while (n < max && (job = core_head(core))) {
        if (!core_place(core, job, now, CORE_ALL_GPUS, &out[n])) break;
        core_launch_job(core, job, &out[n], now);
        n++;
    }
    return n;
}

int core_schedule(core_state *core, double now, core_launch *out, int max) {
    return core->pol->backfill ? core_schedule_backfill(core, now, out, max)
                               : core_schedule_fifo(core, now, out, max);
}

bool core_queue_blocks(const core_state *core) { return !core->pol->backfill; }

