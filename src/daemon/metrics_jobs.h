/* metrics_jobs.h -- the per-job part of aegisd's /metrics, rendered from a
 * plain view of each unfinished job so that it needs no daemon (the unit
 * tests drive it). Its size is bounded whatever the queue: at most
 * max_listed jobs get series of their own (aegis_job_state and the other
 * aegis_job_* families), running ones first, then the oldest waiting; the
 * rest are counted by user and state in aegis_jobs_unlisted.
 */
#ifndef AEGIS_METRICS_JOBS_H
#define AEGIS_METRICS_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "metrics_text.h"

/* An unfinished job's state, as its `state` label says it. */
typedef enum mjob_state { MJOB_QUEUED, MJOB_HELD, MJOB_RUNNING, MJOB_STATES } mjob_state;
extern const char *const mjob_state_names[MJOB_STATES];

/* What /metrics shows of one unfinished job. */
typedef struct mjob {
    int64_t id;
    const char *user, *name;    /* the caller's, alive while rendering */
    mjob_state state;
    char gpus[CORE_MAX_JOB_GPUS * 4]; /* "0,2"; "" unless running */
    /* samples; < 0: none */
    double attempts, memory_bytes, sm_share, energy_j;
} mjob;

/* The job families for jobs[0..n) (ascending ids: oldest first) into t,
 * at most max_listed of them with their own series, and
 * aegis_jobs_unlisted for the others. */
void mjobs_render(mtext *t, const mjob *jobs, size_t n, size_t max_listed);

#endif
