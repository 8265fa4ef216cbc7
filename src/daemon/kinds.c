/* kinds.c -- the kinds of job aegisd runs besides its own (d_job_kind in
 * daemon.h), one row each: a new kind (a pipeline's supervisor) is a row
 * here and its hooks in a file of its own, not branches in jobs*.c.
 */
#include "daemon.h"

/* Asked in order; d_kind_own takes what none claims. */
static const d_job_kind *const d_job_kinds[] = {
    &d_kind_lease,      /* a Slurm job step's lease (lease.c) */
    &d_kind_producer,   /* a data feed's managed producer (feeds.c) */
    &d_kind_supervisor, /* a pipeline's supervisor (pipelines.c) */
};

const d_job_kind *d_job_kind_of(const d_job *job, json_t *row) {
    for (size_t i = 0; i < sizeof(d_job_kinds) / sizeof(d_job_kinds[0]); i++)
        if (d_job_kinds[i]->claims(job, row)) return d_job_kinds[i];
    return &d_kind_own;
}
