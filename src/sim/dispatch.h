/* dispatch.h -- the front dispatcher of a multi-server simulation.
 *
 * It stands in for a cluster manager in front of independent aegis
 * servers, and like one it does not see inside their queues: it sends
 * each job, in submit order, to the server whose outstanding work runs
 * out first, counting work as the trace gives it (GPUs times solo time,
 * drained at the server's GPU count per second of wall time) and ties
 * going to the lower index. A job stays where it was sent.
 *
 * Because the choice reads the trace only, each server's replay depends on
 * its own jobs alone: the engine replays servers independently, in
 * parallel, and gets the same result on any number of threads.
 */
#ifndef AEGIS_DISPATCH_H
#define AEGIS_DISPATCH_H

#include "trace.h"

#include <stdint.h>

/* The servers' job lists: jobs of server s are ids[start[s]..start[s+1]),
 * trace indexes in submit order. */
typedef struct sim_dispatch {
    int servers;
    int32_t *start;     /* servers + 1 offsets into ids */
    int32_t *ids;       /* every job once */
} sim_dispatch;

/* Sends the trace's jobs to `servers` servers of `gpus` GPUs each.
 * Returns 0, or -1 when out of memory. */
int sim_dispatch_plan(sim_dispatch *d, const trace *t, int servers, int gpus);
void sim_dispatch_free(sim_dispatch *d);

#endif
