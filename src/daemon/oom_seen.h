/* oom_seen.h -- a running attempt's GPUs as the last reading that showed
 * its processes on them found them: their memory in use and in all, what
 * an OOM message of the attempt is checked against when it fails
 * (oom_check.h). aegisd reads every GPU once a tick (every second,
 * whatever sample_period_s says); a reading taken after the attempt ended
 * shows its processes gone and their memory freed, and so never replaces
 * one taken in its life.
 *
 * Ownership: an oom_seen lives in its d_job; nothing here allocates.
 */
#ifndef AEGIS_OOM_SEEN_H
#define AEGIS_OOM_SEEN_H

#include "core.h"
#include "oom_check.h"

typedef struct oom_seen {
    int attempt;                        /* whose readings; 0: none yet */
    int ngpus;                          /* GPUs read with it on them */
    oom_gpu_mem gpus[CORE_MAX_JOB_GPUS];
} oom_seen;

/* Reading r of GPU gpu showed attempt `attempt`'s processes there: it
 * replaces the GPU's earlier one, and an earlier attempt's readings. */
void oom_seen_note(oom_seen *s, int attempt, int gpu, const core_reading *r);

/* The readings attempt `attempt` was seen in (*out), and their count: 0
 * when none was (an earlier attempt's are not its). */
int oom_seen_get(const oom_seen *s, int attempt, const oom_gpu_mem **out);

#endif
