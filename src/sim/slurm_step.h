/* slurm_step.h -- several servers replayed as Slurm with aegisd on each
 * node runs them (aegis sim --dispatch slurm).
 *
 * Each node offers a count-only GRES aegis_mem, its GPU memory in MiB;
 * each job asks for its own (sim_dispatch_mem_mib()). Slurm starts jobs
 * in submit order on the first node, in node order, whose unallocated
 * aegis_mem covers the job's: plain FIFO, a job that fits no node holding
 * back those behind it (backfill needs time limits, which traces lack).
 * A job holds its aegis_mem until it leaves its node, its time queued in
 * that node's aegisd included. So a job's node depends on when others
 * end: the servers' replays are stepped together, moment by moment, on
 * one thread.
 *
 * A job that asks more aegis_mem than a node has is refused at submit, as
 * sbatch refuses it, and counts as unfinished. A job aegisd requeues after
 * an OOM stays on its node, where aegisd's ladder knows it; under Slurm it
 * goes back to Slurm's queue (docs/slurm.md).
 */
#ifndef AEGIS_SLURM_STEP_H
#define AEGIS_SLURM_STEP_H

#include "replay.h"
#include "trace.h"

/* Replays the trace on opt->servers servers set up for it (no jobs of
 * their own yet) and writes the records of jobs never started into out.
 * Returns 0, or -1 with the err of a server set (out of memory, or its
 * replay failed). Either way every server's working state is freed. */
int slurm_step_run(replay *servers, const trace *t, const sim_options *opt,
                   sim_job *out);

#endif
