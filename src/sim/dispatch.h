/* dispatch.h -- the front dispatcher of a multi-server simulation, and
 * what the dispatch modes share.
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

/* How jobs reach servers (sim_options.dispatch). */
typedef enum sim_dispatch_mode {
    SIM_DISPATCH_WORK,  /* planned up front by outstanding work (below) */
    SIM_DISPATCH_SLURM  /* as Slurm with aegisd on each node (slurm_step.h) */
} sim_dispatch_mode;

/* The mode's name in outputs ("work", "slurm"), and back: -1 if unknown. */
const char *sim_dispatch_name(sim_dispatch_mode mode);
int sim_dispatch_parse(const char *name);

/* The aegis_mem a job asks Slurm for (--aegis-mem), in whole MiB: the
 * memory the core is told it needs, its estimate, on each of its GPUs;
 * its true peak where the estimator knows none. */
double sim_dispatch_mem_mib(const trace_job *job, int estimator);

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
