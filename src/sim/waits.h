/* waits.h -- a replay's waiting time by reason, for `aegis sim --json`.
 *
 * While a job is queued the core says why it waits (core_job_reason());
 * the time until the reason changes, or the job starts, counts against
 * that reason. Only the jobs at the front of the queue can wait for
 * anything but the head (core_reason_front()), so only they are asked,
 * after a moment of the replay that changed what reasons read
 * (core_reasons_version()); the rest wait "behind". Only a run
 * that asks for it (sim_options.reasons) counts at all.
 *
 * Jobs are the replay's numbers; their figures go into the result's
 * array by trace index (replay.h).
 */
#ifndef AEGIS_WAITS_H
#define AEGIS_WAITS_H

#include "core.h"

#include <stdbool.h>
#include <stdint.h>

/* The replay's reasons: the core's, and the time a job spent in Slurm's
 * queue before it reached its server (slurm_step.h), "slurm" in outputs. */
#define SIM_WAIT_SLURM CORE_WAIT_KINDS
#define SIM_WAIT_KINDS (CORE_WAIT_KINDS + 1)

typedef struct sim_waits {
    double *by_reason;          /* the result's, SIM_WAIT_KINDS per trace
                                   job; NULL: nothing is counted */
    const int32_t *ids;         /* replay job -> trace index */
    uint8_t *kind;              /* each job's reason since `since` */
    double *since;
    bool *queued;               /* waiting now */
    uint32_t *front_at;         /* the last refresh that found it at the
                                   front of the queue */
    uint32_t refreshes;
    uint64_t version;           /* core_reasons_version() at the last
                                   refresh; 0: none yet */
    int32_t front[CORE_BACKFILL_DEPTH]; /* jobs whose reason is not
                                   "behind", as the last refresh found */
    int nfront;
    int cap;                    /* jobs the arrays have room for */
} sim_waits;

/* Sets w up for njobs jobs, counting into by_reason unless it is NULL.
 * Returns 0, or -1 when out of memory. */
int sim_waits_init(sim_waits *w, double *by_reason, const int32_t *ids,
                   int njobs);
/* Makes room for njobs jobs, numbered to trace indexes by ids (which may
 * have moved). Returns 0, or -1 when out of memory. */
int sim_waits_reserve(sim_waits *w, const int32_t *ids, int njobs);
void sim_waits_free(sim_waits *w);

/* Job j joins the queue (arrival, or a retry) at t. */
void sim_waits_queue(sim_waits *w, int32_t j, double t);
/* Job j starts at t: its last reason's time is counted. */
void sim_waits_start(sim_waits *w, int32_t j, double t);
/* Asks the core the reasons at the front of the queue at t; with
 * arrivals_only (nothing but arrivals happened at t), only of the jobs
 * new to the front. */
void sim_waits_refresh(sim_waits *w, core_state *core, double t,
                       bool arrivals_only);

#endif
